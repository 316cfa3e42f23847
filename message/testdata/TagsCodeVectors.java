import java.nio.charset.StandardCharsets;
import java.util.Random;

// Prints "hex<TAB>hashCode" lines: the tags code RocketMQ computes for a tag
// whose UTF-8 bytes are hex, i.e. new String(bytes, UTF_8).hashCode().
// Regenerate tagscode_jdk17.txt (used by TestTagsCode_MatchesJDK) with
//   java TagsCodeVectors.java > tagscode_jdk17.txt
// (OpenJDK 17; the seed is fixed, so the output is stable).
public class TagsCodeVectors {
    static final int[] INTERESTING = {
        0x00, 0x01, 0x20, 0x41, 0x61, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF,
        0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE6, 0xEC, 0xED, 0xEE, 0xEF,
        0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFE, 0xFF,
    };

    public static void main(String[] args) {
        Random rnd = new Random(20250919L);
        String[] fixed = {"", "TagA", "TagB", "a", "*", "tag1||tag2", "\u6807\u7b7e", "caf\u00e9",
            "\ud83d\ude00", "x\ud83d\ude80y", "\ud800\udc00", "\udbff\udfff", "\u0000", "\uffff", "\u07ff\u0800"};
        for (String s : fixed) {
            print(s.getBytes(StandardCharsets.UTF_8));
        }
        for (int i = 0; i < 3000; i++) {
            int n = 1 + rnd.nextInt(8);
            byte[] b = new byte[n];
            for (int j = 0; j < n; j++) {
                b[j] = (byte) (rnd.nextInt(4) == 0 ? rnd.nextInt(256) : INTERESTING[rnd.nextInt(INTERESTING.length)]);
            }
            print(b);
        }
    }

    static void print(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xff));
        System.out.println(sb + "\t" + new String(b, StandardCharsets.UTF_8).hashCode());
    }
}

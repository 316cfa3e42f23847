//go:build !amd64

package message

// copyCRCPaths are the ways copyCRC can take: elsewhere than amd64, one.
func copyCRCPaths() map[string]func(dst, src []byte, crc uint32) uint32 {
	return map[string]func(dst, src []byte, crc uint32) uint32{"two-pass": copyThenCRC}
}

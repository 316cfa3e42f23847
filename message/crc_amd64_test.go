package message

// copyCRCPaths are the ways copyCRC can take on this CPU, each usable for
// any length: TestCopyCRC checks every one, whichever copyCRC picks.
func copyCRCPaths() map[string]func(dst, src []byte, crc uint32) uint32 {
	paths := map[string]func(dst, src []byte, crc uint32) uint32{"two-pass": copyThenCRC}
	if hasFoldCopySSE {
		paths["SSE"] = func(dst, src []byte, crc uint32) uint32 {
			if len(src) < foldCopySSEMin {
				return copyThenCRC(dst, src, crc)
			}
			return copyFold(foldCopySSE, dst, src, crc)
		}
	}
	if hasFoldCopy {
		paths["AVX-512"] = func(dst, src []byte, crc uint32) uint32 {
			if len(src) < foldCopyMin {
				return copyThenCRC(dst, src, crc)
			}
			return copyFold(foldCopyAVX512, dst, src, crc)
		}
	}
	return paths
}

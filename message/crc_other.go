//go:build !amd64

package message

// hasFoldCopy reports whether copyCRC reads src once; elsewhere than
// amd64 it copies and then computes the CRC.
const hasFoldCopy = false

// copyCRC copies src into dst, which must be at least as long, and returns
// crc32.Update(crc, crc32.IEEETable, src).
func copyCRC(dst, src []byte, crc uint32) uint32 { return copyThenCRC(dst, src, crc) }

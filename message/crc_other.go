//go:build !amd64

package message

// copyCRC copies src into dst, which must be at least as long, and returns
// crc32.Update(crc, crc32.IEEETable, src): elsewhere than amd64, in two
// passes.
func copyCRC(dst, src []byte, crc uint32) uint32 { return copyThenCRC(dst, src, crc) }

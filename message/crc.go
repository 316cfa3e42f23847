package message

import "hash/crc32"

// copyThenCRC is copyCRC in two passes: copy, then CRC-32.
func copyThenCRC(dst, src []byte, crc uint32) uint32 {
	copy(dst, src)
	return crc32.Update(crc, crc32.IEEETable, src)
}

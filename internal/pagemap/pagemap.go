// Package pagemap tells which pages of a mapping are mapped into this
// process, from /proc/self/pagemap: tests use it to see that a file was
// faulted in ahead of its writer. A page only in the page cache (read
// ahead, say) does not count.
package pagemap

import (
	"encoding/binary"
	"fmt"
	"os"
	"unsafe"
)

// Missing returns how many pages under b are not mapped into this process.
// b must start at a page boundary.
func Missing(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	page := os.Getpagesize()
	addr := uintptr(unsafe.Pointer(&b[0]))
	if addr%uintptr(page) != 0 {
		return 0, fmt.Errorf("pagemap: %#x is not at a page boundary", addr)
	}
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, fmt.Errorf("pagemap: %w", err)
	}
	defer f.Close()
	entries := make([]byte, 8*((len(b)+page-1)/page))
	if _, err := f.ReadAt(entries, int64(addr/uintptr(page))*8); err != nil {
		return 0, fmt.Errorf("pagemap: %w", err)
	}
	missing := 0
	for i := 0; i < len(entries); i += 8 {
		if binary.LittleEndian.Uint64(entries[i:])&(1<<63) == 0 { // bit 63: present
			missing++
		}
	}
	return missing, nil
}

package pagemap

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMissing counts the pages of a fresh anonymous mapping as missing
// until they are written.
func TestMissing(t *testing.T) {
	page := os.Getpagesize()
	b, err := unix.Mmap(-1, 0, 8*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	if n, err := Missing(b); err != nil || n != 8 {
		t.Fatalf("Missing of a fresh mapping = %d, %v; want 8", n, err)
	}
	b[0], b[3*page] = 1, 1
	if n, err := Missing(b); err != nil || n != 6 {
		t.Fatalf("Missing after writing 2 pages = %d, %v; want 6", n, err)
	}
	if _, err := Missing(b[1:]); err == nil {
		t.Fatal("Missing of an unaligned slice: no error")
	}
}

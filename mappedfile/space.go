package mappedfile

// Space is the writer's view of a File's free tail, from the write
// position to the end (Writable), held so that the file stays mapped while
// the writer fills it outside its owner's lock: a read(2) straight into
// the file. It is the one view that may be written, and only by the file's
// single writer, which then publishes what it wrote with Advance. Release
// it when done.
type Space struct {
	b []byte
	f *File
}

// Space returns the free tail of f, held, if f is still available.
func (f *File) Space() (Space, bool) {
	if !f.Hold() {
		return Space{}, false
	}
	return Space{b: f.Writable(), f: f}, true
}

// Bytes is the free tail, zero where nothing was written yet; valid until
// Release.
func (s Space) Bytes() []byte { return s.b }

// Release drops the space's reference on its File.
func (s Space) Release() {
	if s.f != nil {
		s.f.Release()
	}
}

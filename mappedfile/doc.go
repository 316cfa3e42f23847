// Package mappedfile holds fixed-size, memory-mapped files and runs of them:
// RocketMQ's MappedFile, MappedFileQueue and TransientStorePool.
//
// A File is one preallocated file of a fixed size, named by the offset of its
// first byte in the run (%020d). It keeps three positions, all relative to
// the start of the file:
//
//	0            flushed        committed          wrote          size
//	|--- durable ---|--- in mapping ---|--- in pool buffer ---|-- free --|
//
// Without a pool buffer, writes go straight into the mapping and committed
// equals wrote. With a buffer from a TransientStorePool, writes go to the
// buffer first and Commit copies them into the mapping; readers see only up
// to committed. Flush makes the mapping durable (msync) up to committed;
// the first Flush of a created file also makes its name durable.
//
// A Queue is a run of Files of one size in one folder, named by their start
// offsets, that grows at its tail and is trimmed at its head.
//
// Reads return a Slice of the mapping without copying. A Slice holds a
// reference on its File: the mapping stays valid until every Slice taken
// from it is released, even after the File is destroyed.
package mappedfile

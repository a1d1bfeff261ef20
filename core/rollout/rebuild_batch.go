package rollout

import (
	"runtime"
	"sync"
)

// Batch limits: a batch is decoded in parallel once it holds this many
// bytes or lines (or the file ends).
const (
	batchBytes    = 4 << 20
	batchLines    = 16384
	parallelLines = 512 // below this, one goroutine decodes the batch
)

// batches keeps batch buffers between rebuilds: they grow to a few MiB.
var batches = sync.Pool{New: func() any { return new(batch) }}

// batch holds copies of consecutive lines, to be decoded together.
type batch struct {
	buf   []byte
	spans []lineSpan
	recs  []decodedLine
}

type lineSpan struct {
	start, end int
	n          int
	torn       bool
}

type decodedLine struct {
	rec       record
	err       error
	recovered bool
}

// add copies a line into the batch and reports whether the batch is full.
func (b *batch) add(l []byte, n int, torn bool) bool {
	start := len(b.buf)
	b.buf = append(b.buf, l...)
	b.spans = append(b.spans, lineSpan{start: start, end: len(b.buf), n: n, torn: torn})
	return len(b.buf) >= batchBytes || len(b.spans) >= batchLines
}

// decode decodes every line, on up to GOMAXPROCS goroutines, each with its
// own interner (they are not shared).
func (b *batch) decode(opts *ReadOptions) {
	b.recs = append(b.recs[:0], make([]decodedLine, len(b.spans))...)
	workers := min(runtime.GOMAXPROCS(0), len(b.spans)/parallelLines+1)
	per := (len(b.spans) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(b.spans))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := interner{}
			for i := lo; i < hi; i++ {
				sp := b.spans[i]
				d := &b.recs[i]
				d.recovered, d.err = applyRecovering(b.buf[sp.start:sp.end], func(l []byte) error {
					var err error
					d.rec, err = decodeRecord(l, ids, opts)
					return err
				})
			}
		}()
	}
	wg.Wait()
}

func (b *batch) reset() {
	b.buf, b.spans = b.buf[:0], b.spans[:0]
	clear(b.recs)
	b.recs = b.recs[:0]
}

// reserve gives the empty batch's buffer the room that the batches of a
// file of size bytes need, at once (a batch may end a line past
// batchBytes): grown by appends, it would be copied a dozen times on the
// way to a few MiB, and the pool loses its buffers at collections, which
// a large read causes several of.
func (b *batch) reserve(size int64) {
	want := int(size)
	if size >= batchBytes {
		want = batchBytes + batchSlack
	}
	if cap(b.buf) < want {
		b.buf = make([]byte, 0, want)
	}
}

// batchSlack is the room past batchBytes for the line that fills a batch.
const batchSlack = 64 << 10

// foldBatch decodes the batch and folds its records in file order.
func (rb *rebuilder) foldBatch(b *batch) {
	if len(b.spans) == 0 {
		return
	}
	b.decode(&rb.opts)
	for i := range b.recs {
		d := &b.recs[i]
		if d.err != nil || d.recovered {
			sp := b.spans[i]
			rb.t.Warnings = append(rb.t.Warnings, lineWarning(rb.path, sp.n, sp.torn, d.recovered, d.err))
		}
		if d.err == nil {
			rb.line = b.spans[i].n
			rb.fold(&d.rec)
		}
	}
	b.reset()
}

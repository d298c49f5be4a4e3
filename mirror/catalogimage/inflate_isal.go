//go:build isal && cgo

package catalogimage

/*
#cgo LDFLAGS: -lisal
#include <isa-l/igzip_lib.h>
#include <stdlib.h>
#include <string.h>

// One gzip stream: the inflate state, and the header being read. The header
// is read with isal_read_gzip_header into this struct, which lives as long as
// the stream: a header split across inputs is resumed from what it holds
// (isal_inflate's own header parsing keeps it on its stack, and loses the
// flags of a header cut between two calls).
struct airlock_isal {
	struct inflate_state s;
	struct isal_gzip_header h;
	int in_header;
};

static void airlock_isal_member(struct airlock_isal *z) {
	memset(&z->h, 0, sizeof z->h);
	isal_gzip_header_init(&z->h);
	z->s.crc_flag = ISAL_GZIP_NO_HDR_VER; // the trailer's CRC-32 and length are checked
	z->in_header = 1;
}

static struct airlock_isal *airlock_isal_new(void) {
	struct airlock_isal *z = calloc(1, sizeof(struct airlock_isal));
	if (z != NULL) {
		isal_inflate_init(&z->s);
		airlock_isal_member(z);
	}
	return z;
}

static void airlock_isal_reset(struct airlock_isal *z) {
	isal_inflate_reset(&z->s);
	airlock_isal_member(z);
}

// One step: read the header while it lasts, then inflate from in into out;
// the state keeps no pointer to either once it returns (Go memory must not be
// kept by C).
static int airlock_isal_step(struct airlock_isal *z, unsigned char *in, unsigned int in_len,
		unsigned char *out, unsigned int out_len, unsigned int *used, unsigned int *made, int *finished) {
	struct inflate_state *s = &z->s;
	s->next_in = in;
	s->avail_in = in_len;
	s->next_out = out;
	s->avail_out = out_len;
	int r = ISAL_DECOMP_OK;
	if (z->in_header) {
		r = isal_read_gzip_header(s, &z->h);
		if (r == ISAL_DECOMP_OK) {
			z->in_header = 0;
		} else if (r == ISAL_END_INPUT) {
			r = ISAL_DECOMP_OK; // the header goes on in the next input
		}
	}
	if (r == ISAL_DECOMP_OK && !z->in_header) {
		r = isal_inflate(s);
	}
	*used = in_len - s->avail_in;
	*made = out_len - s->avail_out;
	*finished = !z->in_header && s->block_state == ISAL_BLOCK_FINISH;
	s->next_in = NULL;
	s->avail_in = 0;
	s->next_out = NULL;
	s->avail_out = 0;
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"unsafe"
)

// inflater names the gzip implementation of this build: Intel's ISA-L (igzip),
// about 2.5 times klauspost's speed on catalog layers (docs/benchmarks.md),
// built with -tags isal where libisal is installed (the Makefile does).
const inflater = "ISA-L igzip"

// isalInput is how much compressed input one step is given.
const isalInput = 256 << 10

func init() { gzipReaders[inflater] = newIsalReader }

// newGzipReader inflates the gzip stream r: newIsalReader.
func newGzipReader(r io.Reader) (io.ReadCloser, error) { return newIsalReader(r) }

// newIsalReader inflates the gzip stream r (every member, each checked against
// its CRC-32 and length) with ISA-L on a goroutine of its own, up to
// inflateBlocks blocks ahead of the reader.
func newIsalReader(r io.Reader) (io.ReadCloser, error) {
	s := C.airlock_isal_new()
	if s == nil {
		return nil, errors.New("inflate: out of memory")
	}
	z := &isalReader{src: r, s: s, in: make([]byte, isalInput)}
	return &isalAhead{aheadReader: newAheadReader(z, inflateBlock, inflateBlocks), z: z}, nil
}

// isalReader is one gzip stream inflated by ISA-L, read on one goroutine.
type isalReader struct {
	src    io.Reader
	s      *C.struct_airlock_isal
	mu     sync.Mutex // free against a Read still running
	in     []byte
	off, n int  // unread input: in[off:n]
	srcEOF bool // src is at its end
	member bool // inside a member (its header was started)
	ended  int  // members inflated to their end
	err    error
}

// fill makes sure unread input exists (or src ended); it reports whether some does.
func (z *isalReader) fill() (bool, error) {
	if z.off < z.n {
		return true, nil
	}
	if z.srcEOF {
		return false, nil
	}
	n, err := io.ReadAtLeast(z.src, z.in, 1)
	z.off, z.n = 0, n
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		z.srcEOF = true
		err = nil
	}
	return n > 0, err
}

func (z *isalReader) Read(p []byte) (int, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.err != nil {
		return 0, z.err
	}
	if z.s == nil {
		return 0, errClosedAhead
	}
	for len(p) > 0 {
		more, err := z.fill()
		if err != nil {
			z.err = err
			return 0, err
		}
		if !more {
			if z.member || z.ended == 0 {
				z.err = fmt.Errorf("inflate: %w", io.ErrUnexpectedEOF)
				return 0, z.err
			}
			z.err = io.EOF
			return 0, io.EOF
		}
		out := p
		if len(out) > 1<<30 {
			out = out[:1<<30]
		}
		var used, made C.uint
		var finished C.int
		r := C.airlock_isal_step(z.s, (*C.uchar)(unsafe.Pointer(&z.in[z.off])), C.uint(z.n-z.off),
			(*C.uchar)(unsafe.Pointer(&out[0])), C.uint(len(out)), &used, &made, &finished)
		z.off += int(used)
		z.member = true
		if used == 0 && made == 0 && finished == 0 {
			// ISA-L takes what input it is given: no progress is a bug, not a wait.
			z.err = errors.New("inflate: no progress")
			return 0, z.err
		}
		if r != C.ISAL_DECOMP_OK {
			z.err = fmt.Errorf("inflate: %s", isalError(int(r)))
			return int(made), z.err
		}
		if finished != 0 {
			// The member ended (CRC-32 and length checked): another may follow.
			C.airlock_isal_reset(z.s)
			z.member = false
			z.ended++
		}
		if made > 0 {
			return int(made), nil
		}
	}
	return 0, nil
}

func (z *isalReader) free() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.s != nil {
		C.free(unsafe.Pointer(z.s))
		z.s = nil
	}
}

// isalAhead is the read-ahead over an isalReader; closing it frees the state
// once the read-ahead goroutine is done with it.
type isalAhead struct {
	*aheadReader
	z *isalReader
}

func (a *isalAhead) Close() error {
	a.aheadReader.Close()
	<-a.aheadReader.done
	a.z.free()
	return nil
}

func isalError(r int) string {
	switch r {
	case C.ISAL_INVALID_BLOCK:
		return "invalid deflate block"
	case C.ISAL_INVALID_SYMBOL:
		return "invalid deflate symbol"
	case C.ISAL_INVALID_LOOKBACK:
		return "invalid back-reference"
	case C.ISAL_INVALID_WRAPPER:
		return "not a gzip stream (bad header)"
	case C.ISAL_UNSUPPORTED_METHOD:
		return "unsupported compression method"
	case C.ISAL_INCORRECT_CHECKSUM:
		return "gzip checksum mismatch"
	case C.ISAL_NEED_DICT:
		return "a dictionary is needed"
	}
	return fmt.Sprintf("error %d", r)
}

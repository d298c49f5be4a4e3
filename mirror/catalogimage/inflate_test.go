package catalogimage

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/pgzip"
)

// catalogish returns n bytes that compress like a catalog (JSON-ish, repetitive
// with variation).
func catalogish(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"schema":"olm.bundle","name":"op.v%d.%d.%d","image":"quay.io/ns/op@sha256:%016x%016x"}`+"\n", i%7, r.IntN(50), i, r.Uint64(), r.Uint64())
	}
	return b.Bytes()[:n]
}

func gz(t testing.TB, data []byte, parallel bool) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	if parallel {
		pw, _ := pgzip.NewWriterLevel(&b, 6)
		_ = pw.SetConcurrency(1<<16, 4)
		w = pw
	} else {
		w, _ = kgzip.NewWriterLevel(&b, 6)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func inflateAll(open func(io.Reader) (io.ReadCloser, error), data []byte) ([]byte, error) {
	zr, err := open(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// Each gzip reader of the build (klauspost's, and ISA-L's with -tags isal)
// gives back exactly what was compressed, every member of a multi-member stream
// included, and fails on a damaged, cut or trailing-garbage stream.
func TestGzipReader(t *testing.T) {
	for name, open := range gzipReaders {
		t.Run(name, func(t *testing.T) { testGzipReader(t, open) })
	}
	if _, ok := gzipReaders[inflater]; !ok {
		t.Errorf("the build's inflater %q is not among those tested", inflater)
	}
}

func testGzipReader(t *testing.T, open func(io.Reader) (io.ReadCloser, error)) {
	a, b := catalogish(3<<20+17, 1), catalogish(700<<10, 2)
	one := gz(t, a, false)
	two := append(gz(t, a, true), gz(t, b, false)...)
	empty := gz(t, nil, false)
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
	}{
		{"one member", one, a},
		{"pgzip blocks then a second member", two, append(append([]byte(nil), a...), b...)},
		{"empty member", empty, []byte{}},
		{"empty member after data", append(append([]byte(nil), one...), empty...), a},
	} {
		got, err := inflateAll(open, tc.in)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", tc.name, len(got), err, len(tc.want))
		}
	}
	flipped := bytes.Clone(one)
	flipped[len(flipped)/2] ^= 0x40
	crc := bytes.Clone(one)
	crc[len(crc)-6] ^= 1 // the CRC-32 in the trailer
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"flipped byte", flipped},
		{"wrong CRC-32", crc},
		{"cut in the middle", one[:len(one)/2]},
		{"cut in the trailer", one[:len(one)-3]},
		{"garbage after the member", append(bytes.Clone(one), "not gzip"...)},
	} {
		if got, err := inflateAll(open, tc.in); err == nil {
			t.Errorf("%s: read %d bytes without an error", tc.name, len(got))
		}
	}
}

// FuzzGzipReader: whatever compress/gzip inflates, each of the build's readers
// inflates to the same bytes; of a stream compress/gzip refuses, a reader
// gives an error or, at most, what compress/gzip gave before its error (pgzip
// ends quietly at a broken header after a complete member: harmless here, a
// layer's bytes are checked against its digest before anything is trusted).
func FuzzGzipReader(f *testing.F) {
	f.Add(gz(f, catalogish(5000, 3), false))
	f.Add(append(gz(f, []byte("a"), false), gz(f, []byte("bc"), true)...))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var want []byte
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err == nil {
			want, err = io.ReadAll(io.LimitReader(zr, 64<<20)) // what it gave before an error too
		}
		for name, open := range gzipReaders {
			// Reads of a few bytes, so that headers and trailers are cut.
			var got []byte
			zr, gerr := open(chunkReader{bytes.NewReader(in), 1 + len(in)%13})
			if gerr == nil {
				got, gerr = io.ReadAll(io.LimitReader(zr, 64<<20+1))
				zr.Close()
			}
			if len(got) > 64<<20 {
				continue
			}
			switch {
			case err == nil && (gerr != nil || !bytes.Equal(got, want)):
				t.Fatalf("compress/gzip: %d bytes; %s: %d bytes, %v", len(want), name, len(got), gerr)
			case err != nil && gerr == nil && !bytes.Equal(got, want):
				t.Fatalf("compress/gzip refused (%v) after %d bytes; %s inflated %d other bytes", err, len(want), name, len(got))
			}
		}
	})
}

// BenchmarkGzipReader inflates 32 MB of catalog-like JSON with each of the
// build's inflaters (MB/s of output; make bench runs it).
func BenchmarkGzipReader(b *testing.B) {
	data := catalogish(32<<20, 9)
	in := gz(b, data, false)
	for name, open := range gzipReaders {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if got, err := inflateAll(open, in); err != nil || len(got) != len(data) {
					b.Fatalf("%d bytes, %v", len(got), err)
				}
			}
		})
	}
}

// chunkReader hands out at most n bytes per Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// withHeader compresses data as one gzip member whose header carries a name,
// a comment and extra bytes.
func withHeader(t testing.TB, data []byte, extra int) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Name, w.Comment = "catalog.tar", "built by a test"
	w.Extra = bytes.Repeat([]byte{'x'}, extra)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withHeaderCRC sets FHCRC in a plain member's header and adds its CRC-16.
func withHeaderCRC(member []byte) []byte {
	hdr := bytes.Clone(member[:10])
	hdr[3] |= 0x02
	sum := crc32.ChecksumIEEE(hdr)
	out := append(hdr, byte(sum), byte(sum>>8))
	return append(out, member[10:]...)
}

// A header cut anywhere between two reads (a long extra field, a name, a
// comment, a header CRC, in the first member or a later one) is read on:
// each inflater gives the same bytes whatever the size of the reads.
func TestGzipReaderSplitHeaders(t *testing.T) {
	a, b := catalogish(64<<10, 5), catalogish(9000, 6)
	streams := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"long extra field", withHeader(t, a, 60000), a},
		{"second member with a header", append(gz(t, a, false), withHeader(t, b, 26)...), append(append([]byte(nil), a...), b...)},
		{"header CRC", withHeaderCRC(gz(t, b, false)), b},
	}
	if _, err := gzip.NewReader(bytes.NewReader(streams[2].in)); err != nil {
		t.Fatalf("the FHCRC stream is not valid gzip: %v", err)
	}
	for name, open := range gzipReaders {
		for _, st := range streams {
			for _, n := range []int{1, 2, 3, 7, 11, 4096} {
				zr, err := open(chunkReader{bytes.NewReader(st.in), n})
				var got []byte
				if err == nil {
					got, err = io.ReadAll(zr)
					zr.Close()
				}
				if err != nil || !bytes.Equal(got, st.want) {
					t.Errorf("%s, %s, reads of %d bytes: %d bytes, %v; want %d", name, st.name, n, len(got), err, len(st.want))
				}
			}
		}
	}
}

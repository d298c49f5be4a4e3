package mirror

import (
	"bytes"
	"compress/gzip"
	"fmt"
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
// inflates to the same bytes, and none inflates what compress/gzip refuses.
func FuzzGzipReader(f *testing.F) {
	f.Add(gz(f, catalogish(5000, 3), false))
	f.Add(append(gz(f, []byte("a"), false), gz(f, []byte("bc"), true)...))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var want []byte
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err == nil {
			want, err = io.ReadAll(io.LimitReader(zr, 64<<20))
		}
		for name, open := range gzipReaders {
			got, gerr := inflateAll(open, in)
			if len(got) > 64<<20 {
				continue
			}
			switch {
			case err == nil && (gerr != nil || !bytes.Equal(got, want)):
				t.Fatalf("compress/gzip: %d bytes; %s: %d bytes, %v", len(want), name, len(got), gerr)
			case err != nil && gerr == nil:
				t.Fatalf("compress/gzip refused (%v); %s inflated %d bytes", err, name, len(got))
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

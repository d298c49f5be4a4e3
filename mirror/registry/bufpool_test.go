package registry

import "testing"

// TestBufferOfTheBlobsSizeClass: a blob sent whole is read into a buffer of
// its size class (the least power of two that holds it), not one as large as
// the largest blob sent whole: transfers in flight hold what their blobs
// take. A buffer given back serves a blob of its class.
func TestBufferOfTheBlobsSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, wantCap int }{
		{1000, 1000},           // below pooledMin: its own size
		{pooledMin, pooledMin}, // the smallest class
		{pooledMin + 1, 2 * pooledMin},
		{300 << 10, 512 << 10},
		{1<<20 + 1, 2 << 20},
		{4<<20 + 1, 8 << 20},
	} {
		b := getBuf(tc.n)
		if len(b) != tc.n || cap(b) != tc.wantCap {
			t.Errorf("getBuf(%d): length %d, capacity %d; want %d, %d", tc.n, len(b), cap(b), tc.n, tc.wantCap)
		}
		putBuf(b)
		if again := getBuf(tc.n); len(again) != tc.n || cap(again) != tc.wantCap {
			t.Errorf("getBuf(%d) after a buffer was given back: length %d, capacity %d", tc.n, len(again), cap(again))
		}
	}
	if c := classBits(1 << 40); c != 0 {
		t.Errorf("a blob beyond the largest class has class %d, want none", c)
	}
}

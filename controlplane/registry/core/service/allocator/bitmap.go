// Package allocator hands out Service cluster IPs and node ports, as
// kube-apiserver's legacy allocators do: each range is a bitmap kept in
// etcd as one core/v1 RangeAllocation object (/registry/ranges/serviceips,
// /registry/ranges/servicenodeports), changed only by compare-and-swap, so
// several servers on one etcd never hand out the same item and the state
// survives restarts. A repair loop (Repair) reconciles the bitmaps with the
// stored Services after a crash.
package allocator

import "math/bits"

// Bitmap is a set of offsets in [0, Size).
type Bitmap struct {
	size int
	bits []byte
}

// NewBitmap is a bitmap of size offsets holding data (a previous Data();
// bits past size are dropped).
func NewBitmap(size int, data []byte) *Bitmap {
	b := &Bitmap{size: size, bits: make([]byte, (size+7)/8)}
	copy(b.bits, data)
	if r := size % 8; r != 0 && len(b.bits) > 0 {
		b.bits[len(b.bits)-1] &= byte(1<<r) - 1
	}
	return b
}

// Size is the number of offsets.
func (b *Bitmap) Size() int { return b.size }

// Has reports whether offset i is taken.
func (b *Bitmap) Has(i int) bool {
	return i >= 0 && i < b.size && b.bits[i/8]&(1<<(i%8)) != 0
}

// Set takes offset i; false if it was taken already.
func (b *Bitmap) Set(i int) bool {
	if b.Has(i) {
		return false
	}
	b.bits[i/8] |= 1 << (i % 8)
	return true
}

// Clear frees offset i.
func (b *Bitmap) Clear(i int) {
	if i >= 0 && i < b.size {
		b.bits[i/8] &^= 1 << (i % 8)
	}
}

// Count is the number of taken offsets.
func (b *Bitmap) Count() int {
	n := 0
	for _, x := range b.bits {
		n += bits.OnesCount8(x)
	}
	return n
}

// Offsets lists the taken offsets in order.
func (b *Bitmap) Offsets() []int {
	var out []int
	for i := 0; i < b.size; i++ {
		if b.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// Data is the stored form: bit i of byte i/8, trailing zero bytes trimmed.
func (b *Bitmap) Data() []byte {
	n := len(b.bits)
	for n > 0 && b.bits[n-1] == 0 {
		n--
	}
	return append([]byte(nil), b.bits[:n]...)
}

// Next picks a free offset for a dynamic allocation: the range's upper
// band [lowBand, Size) first, scanning from start (any int, taken modulo
// the band), then the lower band [0, lowBand) that is kept for requested
// items (kube-apiserver's KEP-3070/KEP-3668 split). False when full.
func (b *Bitmap) Next(start, lowBand int) (int, bool) {
	if i, ok := b.scan(lowBand, b.size, start); ok {
		return i, true
	}
	return b.scan(0, lowBand, start)
}

func (b *Bitmap) scan(from, to, start int) (int, bool) {
	n := to - from
	if n <= 0 {
		return 0, false
	}
	s := ((start % n) + n) % n
	for k := 0; k < n; k++ {
		i := from + (s+k)%n
		if !b.Has(i) {
			return i, true
		}
	}
	return 0, false
}

package probes

import "container/heap"

// workerHeap orders waiting workers by due time. Guarded by Manager.mu.
type workerHeap struct{ items []*worker }

func (h *workerHeap) Len() int           { return len(h.items) }
func (h *workerHeap) Less(i, j int) bool { return h.items[i].due.Before(h.items[j].due) }
func (h *workerHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}

// Push and Pop implement heap.Interface; use push and pop.
func (h *workerHeap) Push(x any) {
	w := x.(*worker)
	w.index = len(h.items)
	h.items = append(h.items, w)
}

// Pop implements heap.Interface.
func (h *workerHeap) Pop() any {
	n := len(h.items) - 1
	w := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	w.index = -1
	return w
}

func (h *workerHeap) push(w *worker)   { heap.Push(h, w) }
func (h *workerHeap) pop() *worker     { return heap.Pop(h).(*worker) }
func (h *workerHeap) peek() *worker    { return h.items[0] }
func (h *workerHeap) remove(w *worker) { heap.Remove(h, w.index) }
func (h *workerHeap) fix(w *worker)    { heap.Fix(h, w.index) }

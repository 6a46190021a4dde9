package reuse

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type item struct{ a, b int }

func TestTakeReturnsWhatWasKeptCleared(t *testing.T) {
	var list []*item
	x := Take(&list)
	assert.Equal(t, item{}, *x, "a new object")
	x.a, x.b = 1, 2
	Keep(&list, x, 1)
	Keep(&list, &item{a: 3}, 1) // beyond max: dropped
	assert.Len(t, list, 1)
	y := Take(&list)
	assert.Same(t, x, y)
	assert.Equal(t, item{}, *y, "kept objects are cleared")
	assert.Empty(t, list)
}

func TestDropFrontKeepsTheArray(t *testing.T) {
	q := make([]*item, 0, 16)
	for i := 0; i < 12; i++ {
		q = append(q, &item{a: i})
	}
	whole := q[:cap(q)]
	q = DropFront(q, 2) // 10 left: advances
	assert.Same(t, &whole[2], &q[0])
	assert.Nil(t, whole[0], "dropped elements are cleared")
	start := &q[0]
	q = DropFront(q, 3) // 7 left: moved back to where the queue begins
	assert.Same(t, start, &q[0])
	assert.Equal(t, 5, q[0].a)
	assert.Len(t, q, 7)
	for _, p := range whole[9:] {
		assert.Nil(t, p, "vacated slots are cleared")
	}
	q = DropFront(q, 7)
	assert.Empty(t, q)
	assert.Same(t, start, &q[:1][0], "an emptied queue stays where it begins")
	for _, p := range whole {
		assert.Nil(t, p)
	}
}

func TestEmptiedKeepsOnlySmallArrays(t *testing.T) {
	small := DropFront(append(make([]*item, 0, 4), &item{a: 1}), 1)
	q := Emptied(small, 4)
	assert.Empty(t, q)
	assert.Equal(t, 4, cap(q), "a small array is kept")
	assert.Nil(t, Emptied(make([]*item, 0, 5), 4), "a large one is let go")
}

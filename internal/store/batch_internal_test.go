package store

import "testing"

func TestBatchRowsSplitsIntoFewSizes(t *testing.T) {
	sizes := map[int]bool{}
	for n := 1; n <= 1000; n++ {
		total := 0
		for left := n; left > 0; {
			rows := batchRows(left, maxRunRows)
			if rows > left || rows > maxRunRows {
				t.Fatalf("batch of %d: statement of %d rows with %d left", n, rows, left)
			}
			sizes[rows] = true
			total += rows
			left -= rows
		}
		if total != n {
			t.Fatalf("batch of %d split into %d rows", n, total)
		}
	}
	if len(sizes) != 4 { // 1, 4, 16, 64
		t.Fatalf("statement sizes %v, want the four powers of four up to %d", sizes, maxRunRows)
	}
}

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

func TestCounterRowsTakeOneRunsCountersInOneStatement(t *testing.T) {
	sizes := map[int]bool{}
	for n := 1; n <= 1000; n++ {
		statements, total := 0, 0
		for left := n; left > 0; {
			rows := counterRows(left, maxCounterRows)
			if rows > left || rows > maxCounterRows {
				t.Fatalf("%d counters: statement of %d rows with %d left", n, rows, left)
			}
			sizes[rows] = true
			statements++
			total += rows
			left -= rows
		}
		if total != n {
			t.Fatalf("%d counters split into %d rows", n, total)
		}
		if n <= oneRunCounters && statements != 1 {
			t.Fatalf("%d counters, one run's, in %d statements", n, statements)
		}
	}
	if len(sizes) != oneRunCounters+3 { // 1 to 15, 16, 64, 256
		t.Fatalf("statement sizes %v", sizes)
	}
}

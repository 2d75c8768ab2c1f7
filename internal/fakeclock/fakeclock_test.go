package fakeclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/svc-gateway/svc/internal/fakeclock"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := fakeclock.New(t0)
	assert.Equal(t, t0, c.Now())
	assert.Equal(t, t0, c.Now(), "reading it does not move it")

	assert.Equal(t, t0.Add(time.Minute), c.Advance(time.Minute))
	assert.Equal(t, t0.Add(time.Minute), c.Now())
	c.Advance(-2 * time.Minute)
	assert.Equal(t, t0.Add(-time.Minute), c.Now())

	c.Set(t0.Add(time.Hour))
	assert.Equal(t, t0.Add(time.Hour), c.Now())

	var now func() time.Time = c.Now // the seam packages take
	assert.Equal(t, t0.Add(time.Hour), now())
}

// TestClockIsSafeForConcurrentUse is for -race: readers beside writers.
func TestClockIsSafeForConcurrentUse(t *testing.T) {
	c := fakeclock.New(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Advance(time.Second)
			}
		}()
		go func() {
			defer wg.Done()
			for range 100 {
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, time.Unix(400, 0), c.Now())
}

func TestAfterFuncFiresWhenTheClockReachesIt(t *testing.T) {
	c := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	fired := make(chan struct{})
	c.AfterFunc(time.Second, func() { close(fired) })
	stopped := c.AfterFunc(time.Second, func() { t.Error("a stopped timer fired") })
	assert.Equal(t, 2, c.Timers())
	assert.True(t, stopped(), "stopped before it fired")
	c.Advance(999 * time.Millisecond)
	select {
	case <-fired:
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Millisecond)
	<-fired
	assert.Zero(t, c.Timers())
	assert.False(t, stopped())
}

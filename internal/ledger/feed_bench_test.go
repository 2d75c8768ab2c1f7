package ledger

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkPublish is what the feed adds to each recorded run: nobody
// listening (the usual case), only another tenant listening, and one
// subscriber of the run's tenant, read as fast as it can.
func BenchmarkPublish(b *testing.B) {
	run := sampleRecord("run_bench", json.RawMessage(`{}`)).Run
	b.Run("unheard", func(b *testing.B) {
		f := NewFeed()
		b.ReportAllocs()
		for b.Loop() {
			f.Publish(run)
		}
	})
	b.Run("other tenant listening", func(b *testing.B) {
		f := NewFeed()
		s, err := f.Subscribe("t_other", Filter{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		for b.Loop() {
			f.Publish(run)
		}
	})
	b.Run("one subscriber", func(b *testing.B) {
		// The buffer is emptied, off the clock, before it fills: a reader
		// running beside the loop could fall behind on a loaded machine.
		const buffer = 4096
		f := NewFeed()
		s, err := f.Subscribe(run.TenantID, Filter{}, buffer)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if n++; n == buffer {
				b.StopTimer()
				for range buffer - 1 {
					<-s.Runs()
				}
				n = 1
				b.StartTimer()
			}
			f.Publish(run)
		}
		if s.Dropped() {
			b.Fatal("the subscriber was dropped")
		}
	})
}

// BenchmarkRecordWithSubscriber is BenchmarkRecord with a live stream of
// the runs' tenant, read as fast as it can.
func BenchmarkRecordWithSubscriber(b *testing.B) {
	r, base := benchRecorder(b)
	s, err := r.Feed().Subscribe(base.TenantID, Filter{}, 1<<16)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	go func() {
		for {
			select {
			case <-s.Runs():
			case <-s.Done():
				return
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run := *base
		at := time.Now()
		if err := r.Record(context.Background(), NewRecord(&run, benchEvents(at), at)); err != nil {
			b.Fatal(err)
		}
	}
	if s.Dropped() {
		b.Fatal("the subscriber fell behind")
	}
}

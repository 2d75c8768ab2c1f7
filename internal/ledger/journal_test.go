package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleRecord(id string, response json.RawMessage) *Record {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	run := &Run{
		ID: id, TenantID: "t_1", CreatedAt: at, Route: RouteLive, Status: StatusOK, HTTPStatus: 200,
		Model: "gpt-4o-mini", App: "billing", Agent: "bot", Subject: "u-1", Mode: "observe", KeyID: "key_1",
		Provider: "mock", Stream: true, PromptTokens: 12, CompletionTokens: 7, TotalTokens: 19, UsageUnknown: false,
		CostUSD: 0.000123, PriceUnknown: true, LatencyMS: 1.25, SavedUSD: 0.5, SavedMS: 120, GhostSavedUSD: 0.25, Error: "",
		Explanation: RouteExplanation{Route: RouteLive, Reason: "why", Rejected: []Alternative{{Route: RouteExactCache, Reason: "miss"}},
			Policy: Verdict{Decision: "allow", Rules: []RuleResult{}}, Cache: map[string]any{"tier": "exact_response"}},
		Request:  json.RawMessage(`{"model":"gpt-4o-mini","messages":[]}`),
		Response: response,
	}
	events := []Event{
		{Type: "request.received", Payload: json.RawMessage(`{"a":1}`)},
		{Type: "provider.completed", At: at.Add(time.Second), Payload: json.RawMessage(`{}`)},
	}
	rec := NewRecord(run, events, at)
	if response != nil {
		rec.Standing = &Standing{Trust: TrustRestricted, AllowStreak: 4, Denies: 3, Decisions: 9}
	}
	return rec
}

func TestCodecRoundTrip(t *testing.T) {
	for name, response := range map[string]json.RawMessage{"with response": json.RawMessage(`{"id":"x"}`), "no response": nil} {
		t.Run(name, func(t *testing.T) {
			rec := sampleRecord("run_1", response)
			b, err := appendRecord(nil, rec)
			require.NoError(t, err)
			got, err := decodeRecord(b)
			require.NoError(t, err)
			assert.Equal(t, rec.Run, got.Run)
			assert.Equal(t, rec.Events, got.Events)
			assert.Equal(t, rec.Head, got.Head)
			assert.Equal(t, ChainV2, got.Chain)
			assert.Equal(t, rec.Digest, got.Digest)
			assert.Equal(t, rec.Standing, got.Standing)
			assert.Equal(t, rec.explanation, got.explanation)
		})
	}
}

// legacyFrame turns a record's encoding into that of an older build's
// journal: no chain version or digest after the head (versions 1 and 2),
// and no count of the standing's decisions (version 1).
func legacyFrame(t *testing.T, b []byte, rec *Record, version byte) []byte {
	t.Helper()
	require.Empty(t, rec.Run.TraceID, "runs had no trace id before version 4")
	require.Equal(t, byte(0), b[len(b)-1], "the empty trace id ends the record")
	b = b[:len(b)-1]
	if version == 3 {
		return append([]byte{version}, b[1:]...)
	}
	at := bytes.Index(b, rec.Head.Hash[:]) + len(rec.Head.Hash)
	require.Positive(t, at)
	out := append([]byte{version}, b[1:at]...)
	out = append(out, b[at+1+len(rec.Digest):]...)
	if version == 1 {
		decisions := binary.AppendVarint(nil, rec.Standing.Decisions)
		require.True(t, bytes.HasSuffix(out, decisions), "the standing's count ends the record")
		out = out[:len(out)-len(decisions)]
	}
	return out
}

// A run's trace id crosses the journal.
func TestCodecCarriesTheTraceID(t *testing.T) {
	rec := sampleRecord("run_1", json.RawMessage(`{}`))
	rec.Run.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	b, err := appendRecord(nil, rec)
	require.NoError(t, err)
	got, err := decodeRecord(b)
	require.NoError(t, err)
	assert.Equal(t, rec.Run.TraceID, got.Run.TraceID)
	assert.Equal(t, rec.Run, got.Run)
}

// A journal written before runs named their trace (version 3) reads back,
// its runs without one and their digests as they were.
func TestCodecReadsVersion3(t *testing.T) {
	rec := sampleRecord("run_1", json.RawMessage(`{}`))
	b, err := appendRecord(nil, rec)
	require.NoError(t, err)
	got, err := decodeRecord(legacyFrame(t, b, rec, 3))
	require.NoError(t, err)
	assert.Equal(t, rec.Run, got.Run)
	assert.Equal(t, ChainV2, got.Chain)
	assert.Equal(t, rec.Digest, got.Digest)
}

// A journal written before standings counted their decisions (version 1)
// reads back, its standings counting none.
func TestCodecReadsVersion1(t *testing.T) {
	rec := sampleRecord("run_1", json.RawMessage(`{}`))
	b, err := appendRecord(nil, rec)
	require.NoError(t, err)
	st := rec.Standing

	got, err := decodeRecord(legacyFrame(t, b, rec, 1))
	require.NoError(t, err)
	assert.Equal(t, rec.Run, got.Run)
	assert.Equal(t, &Standing{Trust: st.Trust, AllowStreak: st.AllowStreak, Denies: st.Denies}, got.Standing)
}

// A journal written before a run's digest entered its chain (versions 1
// and 2) reads back as ChainV1 runs, their digest computed for their
// ledger entries.
func TestCodecReadsChainV1Journals(t *testing.T) {
	for _, version := range []byte{1, 2} {
		rec := sampleRecord("run_1", json.RawMessage(`{}`))
		b, err := appendRecord(nil, rec)
		require.NoError(t, err)
		got, err := decodeRecord(legacyFrame(t, b, rec, version))
		require.NoError(t, err, "version %d", version)
		assert.Equal(t, ChainV1, got.Chain, "version %d", version)
		assert.Equal(t, rec.Digest, got.Digest, "version %d", version)
	}
}

func TestCodecRefusesEveryTruncation(t *testing.T) {
	b, err := appendRecord(nil, sampleRecord("run_1", json.RawMessage(`{}`)))
	require.NoError(t, err)
	for n := range len(b) {
		_, err := decodeRecord(b[:n])
		assert.ErrorIs(t, err, errCorrupt, "truncated to %d bytes", n)
	}
}

func TestJournalReplaysUpToATornTail(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir)
	require.NoError(t, err)
	appendRun := func(id string) {
		frame, err := encodeFrame(sampleRecord(id, nil))
		require.NoError(t, err)
		require.NoError(t, j.write(*frame))
	}
	for _, id := range []string{"run_1", "run_2", "run_3"} {
		appendRun(id)
	}
	require.NoError(t, j.rotate())
	appendRun("run_4")
	require.NoError(t, j.close(false))

	// A crash mid-write leaves part of a frame at the end of the first
	// segment; a flipped byte corrupts the only frame of the second.
	first := segmentPath(dir, 1)
	b, err := os.ReadFile(first)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(first, append(b, b[:len(b)/3-5]...), 0o600))
	second := segmentPath(dir, 2)
	b, err = os.ReadFile(second)
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff
	require.NoError(t, os.WriteFile(second, b, 0o600))

	var got []string
	seqs, err := replayJournal(dir, func(rec *Record) error {
		got = append(got, rec.Run.ID)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2}, seqs)
	assert.Equal(t, []string{"run_1", "run_2", "run_3"}, got)

	j2, err := openJournal(dir)
	require.NoError(t, err)
	assert.EqualValues(t, 3, j2.seq, "a new segment never reuses an old number")
	require.NoError(t, j2.close(false))
}

func FuzzDecodeRecord(f *testing.F) {
	b, err := appendRecord(nil, sampleRecord("run_1", json.RawMessage(`{"id":"x"}`)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{codecVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := appendRecord(nil, rec)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if _, err := decodeRecord(again); err != nil {
			t.Fatalf("a re-encoded record does not decode: %v", err)
		}
	})
}

// replayJournal calls fn with each record of each segment in dir, oldest
// first, and returns the segments read. A segment's torn or corrupt tail is
// skipped, since nothing after it was ever acknowledged.
func replayJournal(dir string, fn func(rec *Record) error) ([]uint64, error) {
	seqs, err := segments(dir)
	if err != nil {
		return nil, err
	}
	for _, seq := range seqs {
		if err := readSegment(dir, seq, fn); err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

// mappedJournal opens a journal in a new folder whose open segment is
// mapped, or skips where segments are not.
func mappedJournal(t *testing.T) (*journal, string) {
	t.Helper()
	dir := t.TempDir()
	j, err := openJournal(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.close(false) })
	if j.m == nil {
		t.Skip("journal segments are not mapped on " + runtime.GOOS + ": every write is a pwrite, which the other tests cover")
	}
	return j, dir
}

func writeRun(t *testing.T, j *journal, id string, response json.RawMessage) {
	t.Helper()
	frame, err := encodeFrame(sampleRecord(id, response))
	require.NoError(t, err)
	require.NoError(t, j.write(*frame))
	releaseFrame(frame)
}

func segmentRuns(t *testing.T, dir string, seq uint64) []string {
	t.Helper()
	var ids []string
	require.NoError(t, readSegment(dir, seq, func(rec *Record) error {
		ids = append(ids, rec.Run.ID)
		return nil
	}))
	return ids
}

// What a kill -9 leaves of a mapped segment, its file allocated past its
// frames, replays every frame copied and stops at the zeros after them.
func TestAMappedSegmentReplaysWhatWasCopiedIntoIt(t *testing.T) {
	j, dir := mappedJournal(t)
	for _, id := range []string{"run_1", "run_2", "run_3"} {
		writeRun(t, j, id, nil)
	}
	fi, err := os.Stat(segmentPath(dir, 1))
	require.NoError(t, err)
	assert.Greater(t, fi.Size(), j.size, "the file is allocated ahead of its frames")
	assert.Equal(t, []string{"run_1", "run_2", "run_3"}, segmentRuns(t, dir, 1))

	// Emptied once stored, in place; written again from the start.
	require.NoError(t, j.empty())
	assert.Empty(t, segmentRuns(t, dir, 1))
	writeRun(t, j, "run_4", nil)
	assert.Equal(t, []string{"run_4"}, segmentRuns(t, dir, 1))

	// Sealed, the file is cut to its frames.
	require.NoError(t, j.rotate())
	assert.NotNil(t, j.m, "the next segment is mapped too")
	frame, err := encodeFrame(sampleRecord("run_4", nil))
	require.NoError(t, err)
	fi, err = os.Stat(segmentPath(dir, 1))
	require.NoError(t, err)
	assert.Equal(t, int64(len(*frame)), fi.Size())
	assert.Equal(t, []string{"run_4"}, segmentRuns(t, dir, 1))
}

// A group larger than what is allocated goes by pwrite, which extends the
// file; the writes after it, and an emptying, keep every frame readable.
func TestWritesPastTheAllocationGoByPwrite(t *testing.T) {
	j, dir := mappedJournal(t)
	writeRun(t, j, "run_small", nil)
	big := json.RawMessage(`"` + strings.Repeat("x", reserveAhead+1000) + `"`)
	writeRun(t, j, "run_big", big)
	writeRun(t, j, "run_after", nil)
	assert.Equal(t, []string{"run_small", "run_big", "run_after"}, segmentRuns(t, dir, 1))

	j.reserve() // as the writer does between batches
	writeRun(t, j, "run_mapped", nil)
	assert.Equal(t, []string{"run_small", "run_big", "run_after", "run_mapped"}, segmentRuns(t, dir, 1))

	require.NoError(t, j.empty()) // too much to zero in place: truncated
	assert.Empty(t, segmentRuns(t, dir, 1))
	writeRun(t, j, "run_again", nil)
	assert.Equal(t, []string{"run_again"}, segmentRuns(t, dir, 1))
}

// A mapped segment whose file is cut short under it makes the copy fault:
// the write fails, as a failed write(2) would, and svc goes on.
func TestAMappedSegmentCutShortFailsTheWrite(t *testing.T) {
	j, dir := mappedJournal(t)
	writeRun(t, j, "run_1", nil)
	require.NoError(t, os.Truncate(segmentPath(dir, 1), 0))

	frame, err := encodeFrame(sampleRecord("run_2", nil))
	require.NoError(t, err)
	err = j.write(*frame)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "faulted")

	require.NoError(t, j.rotateAfterError())
	writeRun(t, j, "run_3", nil)
	assert.Equal(t, []string{"run_3"}, segmentRuns(t, dir, 2))
}

// cutFails makes every truncate of j's open segment fail from now on, as
// a file a read-only descriptor stands in for: ftruncate refuses it.
func cutFails(t *testing.T, j *journal, dir string) {
	t.Helper()
	ro, err := os.Open(segmentPath(dir, j.seq))
	require.NoError(t, err)
	rw := j.f
	t.Cleanup(func() { _ = rw.Close() })
	j.f = ro
}

// A segment whose emptying failed part-way, its start cleared but its
// truncate refused, is sealed: runs written on behind a cleared header
// would be lost to a replay.
func TestASegmentThatCannotBeEmptiedIsSealed(t *testing.T) {
	j, dir := mappedJournal(t)
	big := json.RawMessage(`"` + strings.Repeat("x", 3000) + `"`)
	for i := range 4 {
		writeRun(t, j, fmt.Sprintf("run_%d", i), big)
	}
	require.Greater(t, j.size, int64(2*os.Getpagesize()))
	require.NoError(t, os.Truncate(segmentPath(dir, 1), int64(os.Getpagesize()))) // the clear faults on the second page
	cutFails(t, j, dir)

	sealed, err := j.afterStore(true, false)
	require.Error(t, err)
	assert.Equal(t, []uint64{1}, sealed)
	writeRun(t, j, "run_acked", nil)
	assert.Equal(t, []string{"run_acked"}, segmentRuns(t, dir, 2), "an acknowledged run is replayable")
}

// A group whose copy into the mapped segment faults part-way leaves none
// of its runs to a replay, even when the file cannot be cut back, and the
// runs before it stay. (With AVX, amd64's memmove happens to store a
// copy's first bytes last; GODEBUG=cpu.avx=off shows that write's order
// is what keeps the group out.)
func TestAMappedGroupThatFaultsLeavesNoneOfItsRuns(t *testing.T) {
	for _, cut := range []bool{true, false} {
		t.Run(fmt.Sprint("cut works: ", cut), func(t *testing.T) {
			j, dir := mappedJournal(t)
			page := int64(os.Getpagesize())
			var group []byte // two frames: the first whole in the first page, the second past it
			var first int64
			for i := range 2 {
				frame, err := encodeFrame(sampleRecord(fmt.Sprintf("run_failed_%d", i), json.RawMessage(`"`+strings.Repeat("y", 600)+`"`)))
				require.NoError(t, err)
				group = append(group, *frame...)
				if i == 0 {
					first = int64(len(*frame))
				}
				releaseFrame(frame)
			}
			ack, err := encodeFrame(sampleRecord("run_ack0", nil))
			require.NoError(t, err)
			var acked []string
			for i := 0; j.size+int64(len(*ack))+first < page; i++ {
				acked = append(acked, fmt.Sprintf("run_ack%d", i))
				writeRun(t, j, acked[i], nil)
			}
			require.Less(t, j.size+first, page)
			require.Greater(t, j.size+int64(len(group)), page)
			require.NoError(t, os.Truncate(segmentPath(dir, 1), page)) // the copy faults past the first page
			if !cut {
				cutFails(t, j, dir)
			}
			require.Error(t, j.write(group))
			assert.Equal(t, acked, segmentRuns(t, dir, 1), "no run of the failed group is replayed")
		})
	}
}

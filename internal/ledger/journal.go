package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// journal is the recorder's write-ahead log: runs are appended to it, one
// write per group of runs that came in together, before the gateway
// answers, and reach SQLite afterwards in batches. A write that has
// returned is in the kernel's page cache, so it survives the process being
// killed, as a commit in SQLite's WAL with synchronous=NORMAL does.
//
// Where it can (Linux), the open segment is mapped into memory and its file
// allocated ahead of the writes, so that a write is a copy into the page
// cache rather than a write(2): on an idle CPU the system call cost ten
// times the copy. A write that does not fit what is allocated, and any
// write where the segment could not be mapped, is a pwrite(2) at the end.
// A replay stops at the zeros of the allocated tail.
//
// It is a folder of numbered segments. Runs are appended to the open
// segment; once every run in it is stored the recorder empties it and
// writes on from its start, and once it passes segmentLimit while runs keep
// coming it is sealed, to be removed when the runs it holds are stored.
// Creating and removing a file per batch cost more than storing a batch of
// one. A start replays whatever segments a crash left behind, skipping the
// runs already stored.
//
// A frame is the payload's length and CRC-32C (4 bytes each, little
// endian), then the payload. A torn frame at a segment's end, from a crash
// mid-write, ends that segment's replay.
type journal struct {
	dir    string
	f      *os.File
	seq    uint64   // number of the open segment
	size   int64    // bytes of frames written to it
	writes uint64   // writes since the journal opened (runs commit in groups: fewer than runs)
	sealed []uint64 // closed segments whose runs are not yet known stored
	// m is the open segment mapped into memory (nil where it is not), and
	// room how much of its file exists: m[:room] may be written.
	m    []byte
	room int64
	// torn says a write failed part-way: the segment is sealed even when
	// no frame of it is whole.
	torn bool
}

const (
	frameHeader = 8
	segmentExt  = ".log"
	// segmentLimit is the size past which the open segment is sealed
	// rather than written on, so that a replay never reads much that is
	// stored already.
	segmentLimit = 4 << 20
	// maxFrame bounds a frame a replay will accept; a record holds one
	// request and response, each bounded far below this by the server.
	maxFrame = 256 << 20
	// reserveAhead is how far past its frames a mapped segment's file is
	// allocated, by the writer between batches rather than by a call.
	reserveAhead = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segments lists the segment numbers in dir, in order.
func segments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), segmentExt)
		if !ok || e.IsDir() {
			continue
		}
		if n, err := strconv.ParseUint(name, 10, 64); err == nil {
			seqs = append(seqs, n)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

func segmentPath(dir string, seq uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016d%s", seq, segmentExt))
}

// readSegment calls fn with each record of one segment, up to a torn or
// corrupt tail.
func readSegment(dir string, seq uint64, fn func(rec *Record) error) error {
	b, err := os.ReadFile(segmentPath(dir, seq))
	if err != nil {
		return err
	}
	for len(b) >= frameHeader {
		n := binary.LittleEndian.Uint32(b)
		sum := binary.LittleEndian.Uint32(b[4:])
		if n == 0 || n > maxFrame || int(n) > len(b)-frameHeader {
			break // n == 0: the zeros allocated past the last frame
		}
		payload := b[frameHeader : frameHeader+int(n)]
		if crc32.Checksum(payload, castagnoli) != sum {
			break
		}
		rec, err := decodeRecord(payload)
		if err != nil {
			break
		}
		if err := fn(rec); err != nil {
			return err
		}
		b = b[frameHeader+int(n):]
	}
	return nil
}

// openJournal creates dir when missing and opens a new segment numbered
// after every existing one.
func openJournal(dir string) (*journal, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	seqs, err := segments(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{dir: dir, seq: 1}
	if len(seqs) > 0 {
		j.seq = seqs[len(seqs)-1] + 1
	}
	return j, j.open()
}

func (j *journal) open() error {
	f, err := os.OpenFile(segmentPath(j.dir, j.seq), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o640)
	if err != nil {
		return err
	}
	j.f, j.size, j.room, j.torn = f, 0, 0, false
	j.m = mapSegment(f) // nil: every write is a pwrite
	j.reserve()
	return nil
}

// reserve allocates the mapped segment's file reserveAhead past its
// frames, so that the writes to come are copies. When it cannot, writes
// past room are pwrites, which extend the file as they go.
func (j *journal) reserve() {
	if j.m == nil {
		return
	}
	want := min(j.size+reserveAhead, int64(len(j.m)))
	if want <= j.room || allocate(j.f, j.room, want) != nil {
		return
	}
	j.room = want
}

// framePool holds frame buffers between records.
var framePool = sync.Pool{New: func() any { return new([]byte) }}

// encodeFrame encodes rec as a frame in a buffer from framePool; the caller
// puts the buffer back once it is written.
func encodeFrame(rec *Record) (*[]byte, error) {
	buf := framePool.Get().(*[]byte)
	b := append((*buf)[:0], make([]byte, frameHeader)...)
	b, err := appendRecord(b, rec)
	*buf = b
	if err != nil {
		releaseFrame(buf)
		return nil, err
	}
	payload := b[frameHeader:]
	binary.LittleEndian.PutUint32(b, uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(payload, castagnoli))
	return buf, nil
}

// releaseFrame returns a frame's buffer to the pool, unless it grew for an
// unusually large record.
func releaseFrame(buf *[]byte) {
	if cap(*buf) <= 64<<10 {
		framePool.Put(buf)
	}
}

// write appends encoded frames: a copy into the mapped segment when they
// fit what is allocated, else one pwrite. After an error the caller seals
// the segment (rotateAfterError): a partial frame would end its replay
// early.
func (j *journal) write(frames []byte) error {
	end := j.size + int64(len(frames))
	var err error
	if end <= j.room && end <= int64(len(j.m)) {
		// The group's first header last: what follows the frames is
		// zeros (allocated, or cleared by empty), so until the header
		// lands a replay finds nothing of the group, whether the copy
		// faults part-way or the process is killed during it.
		dst := j.m[j.size:end]
		if err = copyMapped(dst[frameHeader:], frames[frameHeader:]); err == nil {
			err = copyMapped(dst[:frameHeader], frames[:frameHeader])
		}
	} else {
		_, err = j.f.WriteAt(frames, j.size)
	}
	if err != nil {
		// Cut what reached the file of a group whose runs are all told
		// they failed, so that none of them is stored after all; when the
		// cut fails, zero the group's first header, which a replay stops
		// at.
		if j.f.Truncate(j.size) != nil {
			_, _ = j.f.WriteAt(make([]byte, frameHeader), j.size)
		}
		j.room = min(j.room, j.size)
		return fmt.Errorf("journal: %w", err)
	}
	j.size, j.room = end, max(j.room, end)
	j.writes++
	return nil
}

func (j *journal) rotateAfterError() error {
	j.torn = true // whatever reached the file, seal it
	if err := j.rotate(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// rotate closes the open segment, when it holds anything, onto the sealed
// list and opens the next.
func (j *journal) rotate() error {
	seal, err := j.seal()
	j.sealed = append(j.sealed, seal...)
	return err
}

// seal closes the open segment, when it holds anything, and opens the
// next, returning the closed one's number for the sealed list; it leaves
// that list alone, so that it can run apart from whoever reads it.
func (j *journal) seal() ([]uint64, error) {
	if j.size == 0 && !j.torn {
		return nil, nil
	}
	err := j.closeFile()
	sealed := j.seq
	j.seq++
	return []uint64{sealed}, errors.Join(err, j.open())
}

// closeFile unmaps the open segment and closes it, cut to its frames: a
// sealed segment's size is what it holds.
func (j *journal) closeFile() error {
	unmap(j.m)
	j.m = nil
	var err error
	if j.room > j.size || j.torn { // allocated ahead, or torn by a failed write
		err = j.f.Truncate(j.size)
	}
	return errors.Join(err, j.f.Close())
}

// afterStore readies the open segment for the runs to come once a batch is
// stored: emptied when every run it holds is stored, sealed when it is
// large, else allocated further ahead. It returns the segment it sealed.
// A segment that could not be emptied is sealed too: its start may be
// cleared already, and runs written after it would not be replayed.
func (j *journal) afterStore(allStored, large bool) ([]uint64, error) {
	switch {
	case allStored:
		err := j.empty()
		if err == nil {
			return nil, nil
		}
		sealed, serr := j.seal() // all its runs are stored: it goes with the next batch
		return sealed, errors.Join(err, serr)
	case large:
		return j.seal() // removed once the runs pending now are stored
	default:
		j.reserve() // so that the next runs' writes are copies
		return nil, nil
	}
}

// empty clears the open segment, all of whose runs are stored, so that it
// is written from its start again: a few frames mapped are zeroed in
// place, keeping their pages; more, or a segment not mapped, is truncated.
func (j *journal) empty() error {
	if j.size == 0 {
		return nil
	}
	if j.size <= reserveAhead && j.size <= int64(len(j.m)) && clearMapped(j.m[:j.size]) == nil {
		j.size = 0
		return nil
	}
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.size, j.room = 0, 0
	j.reserve()
	return nil
}

// takeSealed returns the sealed segments and forgets them.
func (j *journal) takeSealed() []uint64 {
	s := j.sealed
	j.sealed = nil
	return s
}

// remove deletes segments whose records are all stored.
func remove(dir string, seqs ...uint64) error {
	var errList []error
	for _, seq := range seqs {
		if err := os.Remove(segmentPath(dir, seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errList = append(errList, err)
		}
	}
	return errors.Join(errList...)
}

// close closes the open segment, removing it when it is empty or all its
// runs are stored.
func (j *journal) close(allStored bool) error {
	err := j.closeFile()
	if j.size == 0 || allStored {
		err = errors.Join(err, remove(j.dir, j.seq))
	}
	return err
}

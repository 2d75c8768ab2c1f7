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
// write(2) per group of runs that came in together, before the gateway
// answers, and reach SQLite afterwards in batches. A write that has
// returned is in the kernel's page cache, so it survives the process being
// killed, as a commit in SQLite's WAL with synchronous=NORMAL does.
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
	size   int64    // bytes written to it
	writes uint64   // writes since the journal opened (runs commit in groups: fewer than runs)
	sealed []uint64 // closed segments whose runs are not yet known stored
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
		if n > maxFrame || int(n) > len(b)-frameHeader {
			break
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
	f, err := os.OpenFile(segmentPath(j.dir, j.seq), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return err
	}
	j.f, j.size = f, 0
	return nil
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

// write appends encoded frames with one write. After an error the caller
// seals the segment (rotateAfterError): a partial frame would end its
// replay early.
func (j *journal) write(frames []byte) error {
	if _, err := j.f.Write(frames); err != nil {
		// Cut what reached the file of a group whose runs are all told
		// they failed, so that none of them is stored after all; when the
		// cut fails too, the replay skips the torn frame at least.
		_ = j.f.Truncate(j.size)
		return fmt.Errorf("journal: %w", err)
	}
	j.size += int64(len(frames))
	j.writes++
	return nil
}

func (j *journal) rotateAfterError() error {
	j.size = 1 // whatever reached the file, seal it
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
	if j.size == 0 {
		return nil, nil
	}
	err := j.f.Close()
	sealed := j.seq
	j.seq++
	return []uint64{sealed}, errors.Join(err, j.open())
}

// empty truncates the open segment, all of whose runs are stored, so that
// it is written from its start again.
func (j *journal) empty() error {
	if j.size == 0 {
		return nil
	}
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.size = 0
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
	err := j.f.Close()
	if j.size == 0 || allStored {
		err = errors.Join(err, remove(j.dir, j.seq))
	}
	return err
}

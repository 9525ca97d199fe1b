package checkpoint

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
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// The collective MPI-IO format: one file per checkpoint version,
// "ckpt-v<version>.mpiio", holding the blocks of every rank of the
// communicator that saved it, written by one collective write through a
// file view (mpi.WriteAtAll: the ranks' blocks go through the
// aggregators of two-phase I/O and reach the file as large writes).
//
// Layout: a header - magic "FTMPICKF", format, checkpoint version, the
// number of blocks n, then per block its offset, length and CRC-32C, and
// the CRC-32C of the header - followed by the blocks, each at an offset
// aligned to 8 bytes. Rank 0 writes the header and its block in one piece;
// every other rank's view starts at its block. The file is written under a
// temporary name, synced and closed collectively, and renamed into place
// by rank 0 only when the close succeeded everywhere (mpi.File.Close is an
// agreement), so a failure during the save leaves the previous versions
// and at most a temporary file that is never read.
//
// Reading back (LoadFile) is collective too, and any process can read any
// block: after a failure and a Shrink, the survivors each read their own
// block and whoever takes over a dead rank's work reads its block as well,
// all in one collective read through an indexed view. Every block is
// verified against its CRC; a torn, truncated or corrupted file is a
// *CorruptError naming the file and the defect, never data.

const (
	fileMagic     = "FTMPICKF"
	fileFormat    = 1
	fileHeadFixed = 8 + 4 + 4 + 8 + 8 // magic, format, pad, version, n
	fileEntry     = 8 + 8 + 4 + 4     // offset, length, crc, pad
	fileSuffix    = ".mpiio"
	maxFileBlocks = 1 << 20
)

// FilePath is the path of version's collective checkpoint file in dir.
func FilePath(dir string, version int) string {
	return filepath.Join(dir, "ckpt-v"+strconv.Itoa(version)+fileSuffix)
}

func fileHeadLen(n int) int { return fileHeadFixed + n*fileEntry + 8 }

func align8(x int64) int64 { return (x + 7) &^ 7 }

// SaveFile saves data as this rank's block of checkpoint version in the
// collective file of dir (see FilePath), through one collective write
// (mpi.WriteAtAll). It is collective over c: every rank calls it with the
// same dir and version (data may differ in length, and be empty). On an
// error (a failed process: mpi.ErrProcFailed) the version is not saved:
// the file handle is revoked and closed, and the error returned; the
// previous versions are untouched. Saving an existing version replaces it.
func SaveFile(c *mpi.Comm, dir string, version int, data []byte) error {
	const op = "SaveFile"
	if c == nil || c.IsInter() {
		return fmt.Errorf("checkpoint: %s: needs an intracommunicator", op)
	}
	defer traced(c, "checkpoint write", time.Now(), version, len(data))
	if err := checkVersion(version); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %s version %d: %w", op, version, err)
	}
	n, me := c.Size(), c.Rank()
	// Every rank's length and CRC: the header, the same at every rank.
	mine := []int64{int64(len(data)), int64(crc32.Checksum(data, castagnoli))}
	all := make([]int64, 2*n)
	if err := mpi.Allgather(c, mine, all); err != nil {
		return fmt.Errorf("checkpoint: %s version %d: %w", op, version, err)
	}
	head := make([]byte, fileHeadLen(n))
	copy(head, fileMagic)
	binary.LittleEndian.PutUint32(head[8:], fileFormat)
	binary.LittleEndian.PutUint64(head[16:], uint64(version))
	binary.LittleEndian.PutUint64(head[24:], uint64(n))
	off := align8(int64(len(head)))
	offs := make([]int64, n)
	for r := range n {
		e := head[fileHeadFixed+r*fileEntry:]
		offs[r] = off
		binary.LittleEndian.PutUint64(e, uint64(off))
		binary.LittleEndian.PutUint64(e[8:], uint64(all[2*r]))
		binary.LittleEndian.PutUint32(e[16:], uint32(all[2*r+1]))
		off = align8(off + all[2*r])
	}
	hc := len(head) - 8
	binary.LittleEndian.PutUint32(head[hc:], crc32.Checksum(head[:hc], castagnoli))

	path := FilePath(dir, version)
	tmp := path + ".tmp"
	f, err := mpi.FileOpen(c, tmp, mpi.ModeCreate|mpi.ModeWronly, nil)
	if err != nil {
		return fmt.Errorf("checkpoint: %s version %d: %w", op, version, err)
	}
	buf, disp := data, offs[me]
	if me == 0 {
		buf = make([]byte, offs[0]+int64(len(data)))
		copy(buf, head)
		copy(buf[offs[0]:], data)
		disp = 0
	}
	err = f.SetView(disp, mpi.Byte, nil)
	if err == nil {
		err = mpi.WriteAtAll(f, 0, buf)
	}
	if err == nil {
		err = f.SetSize(offs[n-1] + all[2*(n-1)]) // the end of the last block
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close() // an agreement: it fails everywhere or nowhere
	}
	if err != nil {
		closeAfter(f)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %s version %d: %w", op, version, err)
	}
	var rerr error
	if me == 0 {
		if rerr = os.Rename(tmp, path); rerr == nil {
			if d, err := os.Open(dir); err == nil {
				d.Sync()
				d.Close()
			}
		}
	}
	// Every rank learns whether rank 0 renamed it.
	ok := []int64{1}
	if rerr != nil {
		ok[0] = 0
	}
	if err := mpi.Bcast(c, ok, 0); err != nil {
		return fmt.Errorf("checkpoint: %s version %d: %w", op, version, err)
	}
	if rerr != nil {
		return fmt.Errorf("checkpoint: %s version %d: %w", op, version, rerr)
	}
	if ok[0] != 1 {
		return fmt.Errorf("checkpoint: %s version %d: rank 0 could not rename %s", op, version, tmp)
	}
	return nil
}

// closeAfter closes a file whose collective operation failed: it revokes
// the handle (the other ranks' operations on it end), acknowledges the
// failures and closes, again while another failure appears.
func closeAfter(f *mpi.File) {
	f.Revoke()
	for range 16 {
		f.GetFailed()
		if err := f.Close(); err == nil || errors.Is(err, mpi.ErrRevoked) || errors.Is(err, mpi.ErrFile) {
			return
		}
	}
}

// LoadFile reads blocks of checkpoint version from the collective file of
// dir: the blocks of the ranks listed (ranks of the communicator that
// saved it), this rank's own block if none is listed. It is collective
// over c, which may be another communicator than the one that saved (the
// survivors of a Shrink): each rank may ask for any blocks, and they are
// read in one collective read. Every block is verified; a missing file
// gives an error wrapping ErrNotFound, a damaged one a *CorruptError.
func LoadFile(c *mpi.Comm, dir string, version int, ranks ...int) ([][]byte, error) {
	const op = "LoadFile"
	if c == nil || c.IsInter() {
		return nil, fmt.Errorf("checkpoint: %s: needs an intracommunicator", op)
	}
	defer traced(c, "checkpoint read", time.Now(), version, -1)
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	if len(ranks) == 0 {
		ranks = []int{c.Rank()}
	}
	path := FilePath(dir, version)
	f, err := mpi.FileOpen(c, path, mpi.ModeRdonly, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: no version %d (%s): %w", version, path, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s version %d: %w", op, version, err)
	}
	out, lerr := loadBlocks(f, path, version, ranks)
	// The collective read is done by every rank, also one whose header
	// check failed (with nothing to read), so the others do not wait.
	if err := f.Close(); err != nil && lerr == nil {
		lerr = fmt.Errorf("checkpoint: %s version %d: %w", op, version, err)
	}
	if lerr != nil {
		return nil, lerr
	}
	return out, nil
}

type blockInfo struct {
	off, n int64
	crc    uint32
}

// loadBlocks verifies the header and reads the blocks (collectively).
func loadBlocks(f *mpi.File, path string, version int, ranks []int) ([][]byte, error) {
	bad := func(format string, args ...any) error {
		return &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	blocks, herr := readHeader(f, path, version, bad)
	var want []int
	if herr == nil {
		for _, r := range ranks {
			if r < 0 || r >= len(blocks) {
				herr = fmt.Errorf("checkpoint: LoadFile version %d: rank %d has no block (the file has %d)", version, r, len(blocks))
				break
			}
			if blocks[r].n > 0 && !slices.Contains(want, r) {
				want = append(want, r)
			}
		}
	}
	if herr != nil {
		want = nil
	}
	// An indexed view of the wanted blocks, in file order.
	slices.SortFunc(want, func(a, b int) int { return int(blocks[a].off - blocks[b].off) })
	var lens, displs []int
	total := int64(0)
	for _, r := range want {
		lens = append(lens, int(blocks[r].n))
		displs = append(displs, int(blocks[r].off))
		total += blocks[r].n
	}
	var ft *mpi.Datatype
	if len(want) > 0 {
		t, err := mpi.TypeIndexed(lens, displs, mpi.Byte)
		if err == nil {
			err = t.Commit()
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: LoadFile version %d: %w", version, err)
		}
		ft = t
	}
	buf := make([]byte, total)
	err := f.SetView(0, mpi.Byte, ft)
	if err == nil {
		var n int
		n, err = mpi.ReadAtAll(f, 0, buf)
		if err == nil && int64(n) < total {
			err = bad("truncated: %d of the %d bytes of the blocks of ranks %v", n, total, want)
		}
	}
	if herr != nil {
		return nil, herr
	}
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, fmt.Errorf("checkpoint: LoadFile version %d: %w", version, err)
	}
	got := map[int][]byte{}
	at := int64(0)
	for _, r := range want {
		b := buf[at : at+blocks[r].n]
		at += blocks[r].n
		if c := crc32.Checksum(b, castagnoli); c != blocks[r].crc {
			return nil, bad("block of rank %d: checksum mismatch (stored %08x, computed %08x)", r, blocks[r].crc, c)
		}
		got[r] = b
	}
	out := make([][]byte, len(ranks))
	for i, r := range ranks {
		out[i] = got[r]
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out, nil
}

// readHeader reads and verifies the header (independent reads).
func readHeader(f *mpi.File, path string, version int, bad func(string, ...any) error) ([]blockInfo, error) {
	size, err := f.GetSize()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: LoadFile version %d: %w", version, err)
	}
	fixed := make([]byte, fileHeadFixed)
	if n, err := mpi.ReadAt(f, 0, fixed); err != nil {
		return nil, fmt.Errorf("checkpoint: LoadFile version %d: %w", version, err)
	} else if n < len(fixed) {
		return nil, bad("truncated header: %d of at least %d bytes", n, len(fixed))
	}
	if string(fixed[:8]) != fileMagic {
		return nil, bad("bad magic %q, not a collective checkpoint file", fixed[:8])
	}
	nb := binary.LittleEndian.Uint64(fixed[24:])
	if nb == 0 || nb > maxFileBlocks || int64(fileHeadLen(int(nb))) > size {
		return nil, bad("header names %d blocks, more than a file of %d bytes holds", nb, size)
	}
	head := make([]byte, fileHeadLen(int(nb)))
	if _, err := mpi.ReadAt(f, 0, head); err != nil {
		return nil, fmt.Errorf("checkpoint: LoadFile version %d: %w", version, err)
	}
	hc := len(head) - 8
	if got, want := binary.LittleEndian.Uint32(head[hc:]), crc32.Checksum(head[:hc], castagnoli); got != want {
		return nil, bad("header checksum mismatch (stored %08x, computed %08x)", got, want)
	}
	if fm := binary.LittleEndian.Uint32(head[8:]); fm != fileFormat {
		return nil, bad("unknown format version %d (this package reads %d)", fm, fileFormat)
	}
	if v := binary.LittleEndian.Uint64(head[16:]); v != uint64(version) {
		return nil, bad("holds version %d, not %d", v, version)
	}
	blocks := make([]blockInfo, nb)
	for r := range blocks {
		e := head[fileHeadFixed+r*fileEntry:]
		b := blockInfo{off: int64(binary.LittleEndian.Uint64(e)), n: int64(binary.LittleEndian.Uint64(e[8:])), crc: binary.LittleEndian.Uint32(e[16:])}
		if b.off < int64(len(head)) || b.n < 0 || b.off+b.n > size {
			return nil, bad("block of rank %d (%d bytes at %d) lies outside the file of %d bytes", r, b.n, b.off, size)
		}
		blocks[r] = b
	}
	return blocks, nil
}

// LatestFile returns the newest version that has a collective checkpoint
// file in dir (without verifying it: LoadFile does), or an error wrapping
// ErrNotFound. Temporary files of interrupted saves are ignored.
func LatestFile(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("checkpoint: LatestFile: %w", err)
	}
	best := -1
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "ckpt-v") || !strings.HasSuffix(name, fileSuffix) {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "ckpt-v"), fileSuffix))
		if err == nil && v > best {
			best = v
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("checkpoint: no collective checkpoint in %s: %w", dir, ErrNotFound)
	}
	return best, nil
}

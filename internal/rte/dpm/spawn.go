package dpm

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
)

// Spawns counts the MPI_Comm_spawn calls of each parent group, to name
// each call for the launcher. The zero value is ready.
type Spawns struct {
	mu  sync.Mutex
	seq map[string]uint64 // per parent group and context: spawn calls so far
}

// Key names the next collective spawn call of the group procs on context
// ctx: the same at every parent (each counts the group's calls alike),
// different from any other call in the job.
func (s *Spawns) Key(ctx uint32, procs []int) string {
	k := strconv.FormatUint(uint64(ctx), 10) + fmt.Sprint(procs)
	s.mu.Lock()
	if s.seq == nil {
		s.seq = make(map[string]uint64)
	}
	s.seq[k]++
	seq := s.seq[k]
	s.mu.Unlock()
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(ctx), 10))
	b.WriteByte('/')
	b.WriteString(strconv.FormatUint(seq, 10))
	// The group as its size and a hash of its ids, not the ids: the key
	// travels in every parent's request (a list would be n^2 bytes at
	// the launcher).
	h := fnv.New64a()
	var w [8]byte
	for _, p := range procs {
		binary.LittleEndian.PutUint64(w[:], uint64(p))
		h.Write(w[:])
	}
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(len(procs)))
	b.WriteByte('/')
	b.WriteString(strconv.FormatUint(h.Sum64(), 16))
	return b.String()
}

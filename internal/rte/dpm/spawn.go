package dpm

import (
	"fmt"
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
	for _, p := range procs {
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(p))
	}
	return b.String()
}

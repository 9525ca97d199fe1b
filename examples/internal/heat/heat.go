// Package heat is the computation shared by the Reinit examples: the 1-D
// heat equation u_t = u_xx on (0,1), u = 0 at both ends, solved by explicit
// time steps with the grid split into one block per rank. Each step
// exchanges one halo value with each neighbour. The state of a rank is its
// block and the step number; it checkpoints every few steps through the
// checkpoint package, so a rank restarted by Reinit resumes from the last
// checkpoint every rank has, and the final checksum is the same as a run
// without failures (the arithmetic of every point does not depend on the
// rank count or on restarts).
//
// It is an example's helper, not a library: it must not be imported by the
// runtime.
package heat

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/ftmpi/ftmpi/checkpoint"
	"github.com/ftmpi/ftmpi/mpi"
)

// Params are the command-line parameters of a run.
type Params struct {
	N       int           // interior grid points
	Steps   int           // time steps
	Every   int           // steps between checkpoints
	CkptDir string        // checkpoint directory
	Pace    time.Duration // extra time per step, standing for more computation
	// Progress makes rank 0 print "heat: step S done" every Every steps,
	// points of the run a test can tie an injected fault to.
	Progress bool
}

// Flags registers the parameters on the default flag set.
func Flags() *Params {
	p := &Params{}
	flag.IntVar(&p.N, "n", 256, "interior grid points")
	flag.IntVar(&p.Steps, "steps", 20000, "time steps")
	flag.IntVar(&p.Every, "every", 500, "steps between checkpoints")
	def := filepath.Join(os.TempDir(), "ftmpi-heat-ckpt")
	if d := os.Getenv("FTMPI_TMPDIR"); d != "" {
		def = filepath.Join(d, "heat-ckpt") // the job's directory: gone with the job
	}
	flag.StringVar(&p.CkptDir, "ckpt", def, "checkpoint directory")
	flag.DurationVar(&p.Pace, "pace", 0, "extra time per step (more computation per step)")
	flag.BoolVar(&p.Progress, "progress", false, "rank 0 prints \"heat: step S done\" every -every steps (for tests: ftmpirun --inject 'kill:rank=1,on=step 700 done')")
	return p
}

// State is one rank's part of the computation.
type State struct {
	P          Params
	Rank, Size int
	Lo, M      int       // first owned point, number of owned points
	U, next    []float64 // u[0] and u[M+1] are halo cells
	Step       int       // steps done
}

// New returns the initial state of rank of size: u(x,0) = sin(pi x) + 0.5 sin(3 pi x).
func New(p Params, rank, size int) *State {
	s := &State{P: p, Rank: rank, Size: size}
	s.Lo = rank * p.N / size
	s.M = (rank+1)*p.N/size - s.Lo
	s.U = make([]float64, s.M+2)
	s.next = make([]float64, s.M+2)
	h := 1.0 / float64(p.N+1)
	for i := 1; i <= s.M; i++ {
		x := float64(s.Lo+i) * h
		s.U[i] = math.Sin(math.Pi*x) + 0.5*math.Sin(3*math.Pi*x)
	}
	return s
}

// Advance does one time step on c (CommWorld of the current epoch).
func (s *State) Advance(c *mpi.Comm) error {
	left, right := s.Rank-1, s.Rank+1
	if left < 0 {
		left = mpi.ProcNull
	}
	if right >= s.Size {
		right = mpi.ProcNull
	}
	m := s.M
	if _, err := mpi.Sendrecv(c, s.U[1:2], left, 0, s.U[m+1:m+2], right, 0); err != nil {
		return err
	}
	if _, err := mpi.Sendrecv(c, s.U[m:m+1], right, 1, s.U[0:1], left, 1); err != nil {
		return err
	}
	h := 1.0 / float64(s.P.N+1)
	r := 0.4 * h * h / (h * h) // dt = 0.4 h^2: stable
	for i := 1; i <= m; i++ {
		s.next[i] = s.U[i] + r*(s.U[i-1]-2*s.U[i]+s.U[i+1])
	}
	s.U, s.next = s.next, s.U
	s.Step++
	if s.P.Pace > 0 {
		time.Sleep(s.P.Pace)
	}
	if s.P.Progress && s.Rank == 0 && s.Step%s.P.Every == 0 {
		fmt.Printf("heat: step %d done\n", s.Step)
	}
	return nil
}

// Encode is the checkpoint of the state: the step and the owned points.
func (s *State) Encode() []byte {
	b := make([]byte, 8+8*s.M)
	binary.LittleEndian.PutUint64(b, uint64(s.Step))
	for i := 1; i <= s.M; i++ {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(s.U[i]))
	}
	return b
}

// Decode restores the state from a checkpoint made by Encode.
func (s *State) Decode(b []byte) error {
	if len(b) != 8+8*s.M {
		return fmt.Errorf("heat: checkpoint of %d bytes, want %d", len(b), 8+8*s.M)
	}
	s.Step = int(binary.LittleEndian.Uint64(b))
	for i := 1; i <= s.M; i++ {
		s.U[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return nil
}

// Restore loads the newest checkpoint every rank of c has, or starts from
// the initial condition if there is none. It reports whether it resumed.
func Restore(st *checkpoint.Store, c *mpi.Comm, s *State) (bool, error) {
	v, err := st.LatestCommon(c)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b, err := st.LoadCollective(c, v)
	if err != nil {
		return false, err
	}
	return true, s.Decode(b)
}

// Checksum gathers the solution at rank 0 and returns sum_i u_i * (i+1)
// there (0 elsewhere).
func (s *State) Checksum(c *mpi.Comm) (float64, error) {
	counts := make([]int, s.Size)
	displs := make([]int, s.Size)
	for r := range counts {
		displs[r] = r * s.P.N / s.Size
		counts[r] = (r+1)*s.P.N/s.Size - displs[r]
	}
	var all []float64
	if s.Rank == 0 {
		all = make([]float64, s.P.N)
	}
	if err := mpi.Gatherv(c, s.U[1:s.M+1], all, counts, displs, 0); err != nil {
		return 0, err
	}
	sum := 0.0
	for i, v := range all {
		sum += v * float64(i+1)
	}
	return sum, nil
}

// Start initialises MPI, sets handler on CommWorld (the seed's examples set
// a Reinit handler before MPI_Reinit) and opens this rank's checkpoint
// store; on error it prints prog's name and exits.
func Start(prog string, p *Params, handler *mpi.Errhandler) (*mpi.World, *checkpoint.Store) {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		os.Exit(1)
	}
	if err := w.CommWorld().SetErrhandler(handler); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		os.Exit(1)
	}
	st, err := checkpoint.Open(p.CkptDir, w.Rank())
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		w.Abort(1)
	}
	st.SetKeep(2)
	return w, st
}

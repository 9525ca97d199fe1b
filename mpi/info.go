package mpi

import (
	"slices"
	"sync"
)

// Info objects (MPI-4.1 10): ordered (key, value) string pairs passed as
// hints to calls that take them (Comm.SetInfo, DupWithInfo, SpawnInfo;
// windows and files when they come). A nil *Info is MPI_INFO_NULL: it holds
// no keys; calls that would change it fail with ErrInfo.
//
// Keys are compared exactly (case-sensitive) and kept in the order they
// were first set, which is the order of GetNthkey and Keys. An Info may be
// used from several goroutines.

// The error classes of info objects.
var (
	ErrInfo      = &Class{"MPI_ERR_INFO: invalid info object", 34}      // MPI_ERR_INFO
	ErrInfoKey   = &Class{"MPI_ERR_INFO_KEY: invalid info key", 31}     // MPI_ERR_INFO_KEY
	ErrInfoValue = &Class{"MPI_ERR_INFO_VALUE: invalid info value", 33} // MPI_ERR_INFO_VALUE
	ErrInfoNokey = &Class{"MPI_ERR_INFO_NOKEY: no such info key", 32}   // MPI_ERR_INFO_NOKEY
)

// Limits of info keys and values (MPI_MAX_INFO_KEY, MPI_MAX_INFO_VAL).
const (
	MaxInfoKey = 255
	MaxInfoVal = 1024
)

// Info is an info object (MPI_Info).
type Info struct {
	mu   sync.Mutex
	keys []string
	vals map[string]string
}

// NewInfo returns an empty info object (MPI_Info_create).
func NewInfo() *Info { return &Info{vals: make(map[string]string)} }

func checkInfo(i *Info, op string) error {
	if i == nil {
		return newErr(ErrInfo, op, nil, NoPeer, "nil info (MPI_INFO_NULL)")
	}
	return nil
}

func checkInfoKey(op, key string) error {
	switch {
	case key == "":
		return newErr(ErrInfoKey, op, nil, NoPeer, "empty key")
	case len(key) > MaxInfoKey:
		return newErr(ErrInfoKey, op, nil, NoPeer, "key of %d bytes (at most %d)", len(key), MaxInfoKey)
	}
	return nil
}

// Set sets key to value, replacing any previous value (MPI_Info_set).
// Keys are 1 to MaxInfoKey bytes, values at most MaxInfoVal.
func (i *Info) Set(key, value string) error {
	const op = "MPI_Info_set"
	if err := checkInfo(i, op); err != nil {
		return err
	}
	if err := checkInfoKey(op, key); err != nil {
		return err
	}
	if len(value) > MaxInfoVal {
		return newErr(ErrInfoValue, op, nil, NoPeer, "value of %d bytes for key %q (at most %d)", len(value), key, MaxInfoVal)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.vals[key]; !ok {
		i.keys = append(i.keys, key)
	}
	i.vals[key] = value
	return nil
}

// Get returns the value of key and whether it is set (MPI_Info_get_string).
// A nil Info holds no keys.
func (i *Info) Get(key string) (string, bool) {
	if i == nil {
		return "", false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	v, ok := i.vals[key]
	return v, ok
}

// Delete removes key (MPI_Info_delete); an absent key is an ErrInfoNokey
// error.
func (i *Info) Delete(key string) error {
	const op = "MPI_Info_delete"
	if err := checkInfo(i, op); err != nil {
		return err
	}
	if err := checkInfoKey(op, key); err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.vals[key]; !ok {
		return newErr(ErrInfoNokey, op, nil, NoPeer, "key %q is not set", key)
	}
	delete(i.vals, key)
	i.keys = slices.DeleteFunc(i.keys, func(k string) bool { return k == key })
	return nil
}

// GetNkeys returns the number of keys set (MPI_Info_get_nkeys); 0 for a
// nil Info.
func (i *Info) GetNkeys() int {
	if i == nil {
		return 0
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.keys)
}

// GetNthkey returns the n-th key, from 0 (MPI_Info_get_nthkey); n out of
// range is an ErrArg error.
func (i *Info) GetNthkey(n int) (string, error) {
	const op = "MPI_Info_get_nthkey"
	if err := checkInfo(i, op); err != nil {
		return "", err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if n < 0 || n >= len(i.keys) {
		return "", newErr(ErrArg, op, nil, NoPeer, "key index %d out of range [0, %d)", n, len(i.keys))
	}
	return i.keys[n], nil
}

// Keys returns the keys in the order they were first set (nil for a nil
// Info): MPI_Info_get_nthkey for each n below MPI_Info_get_nkeys.
func (i *Info) Keys() []string {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.keys)
}

// Dup returns a copy of i (MPI_Info_dup).
func (i *Info) Dup() (*Info, error) {
	if err := checkInfo(i, "MPI_Info_dup"); err != nil {
		return nil, err
	}
	return i.clone(), nil
}

// clone copies i; nil stays nil.
func (i *Info) clone() *Info {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	n := &Info{keys: slices.Clone(i.keys), vals: make(map[string]string, len(i.vals))}
	for k, v := range i.vals {
		n.vals[k] = v
	}
	return n
}

// SetInfo sets the hints of c to a copy of info (MPI_Comm_set_info),
// replacing the previous ones; nil clears them. ftmpi interprets no
// communicator hint today: they are kept for GetInfo and copied by Dup.
// Like MPI's, the call is collective in intent, but ftmpi does not
// communicate for it.
func (c *Comm) SetInfo(info *Info) error {
	if err := checkComm(c, "MPI_Comm_set_info"); err != nil {
		return err
	}
	c.attr.info.Store(info.clone())
	return nil
}

// GetInfo returns a new Info holding c's hints (MPI_Comm_get_info): those
// set by SetInfo or inherited through Dup; the caller owns it.
func (c *Comm) GetInfo() (*Info, error) {
	if err := checkComm(c, "MPI_Comm_get_info"); err != nil {
		return nil, err
	}
	if i := c.attr.info.Load().clone(); i != nil {
		return i, nil
	}
	return NewInfo(), nil
}

// SpawnInfo is Spawn with an info argument (MPI_Comm_spawn's info,
// significant at root only). Of the reserved keys (MPI-4.1 11.3.4) ftmpi
// interprets "path" and "wdir" (spawn.go, spawnOptions); it ignores
// "host", "arch", "file" and "soft" (ftmpirun places and starts spawned
// processes like the job's own, and MPI lets an implementation ignore
// keys it does not use). A nil info is MPI_INFO_NULL.
func (c *Comm) SpawnInfo(command string, args []string, maxprocs int, info *Info, root int) (*Comm, error) {
	if c != nil && c.rank == root {
		command = spawnProgram(command, info)
	}
	return c.spawnIn("MPI_Comm_spawn", command, args, maxprocs, spawnDir(info), nil, root)
}

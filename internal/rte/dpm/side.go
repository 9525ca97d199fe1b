package dpm

import (
	"slices"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// Local is the collectives of a side's own group, rooted at the root's
// rank among them.
type Local interface {
	ReduceAND(words []uint64, root int) error
	BcastTree(b []byte, root int) error
}

// Side is one process's part, within its own group, of one Accept or
// Connect: the root shares what it learnt from the other root, and the
// group runs rounds of a local AND whose result the roots AND with each
// other's (the context ids of the intercommunicator).
type Side struct {
	T      *Table
	Local  Local  // the group's collectives (BcastTree unused when N is 1)
	N      int    // processes of the group taking part
	Root   int    // the root's rank among them
	Me     bool   // this process is the root
	Conn   *Conn  // at the root once it found the other root
	Remote Group  // the other group: at the root from Connect or Accept, elsewhere from Share
	Cancel Cancel // ends the roots' waits (the job's end; no deadline)
}

// Share broadcasts the root's outcome so far (code: 0 when it found the
// other root, else its error's class code) and the remote group within
// the side, and returns the connection id. A root's failure is an
// ErrRemote error with its code at every process.
func (s *Side) Share(code int) (uint64, error) {
	hdr := make([]byte, rootInfoLen)
	var body []byte
	if s.Me {
		ri := rootInfo{code: code}
		if code == 0 {
			if s.Conn == nil {
				ri.code = s.T.cfg.Code(errorf(ErrNoConn, "the roots never found each other"))
			} else {
				body = EncodeGroup(s.Remote)
				ri.n, ri.id = uint64(len(body)), s.Conn.ID()
			}
		}
		ri.encode(hdr)
	}
	if s.N > 1 {
		if err := s.Local.BcastTree(hdr, s.Root); err != nil {
			return 0, err
		}
	}
	ri, err := decodeRootInfo(hdr)
	if err != nil {
		return 0, err
	}
	if ri.code != 0 {
		return 0, &Error{Kind: ErrRemote, Code: ri.code, Detail: "the root could not reach the other group"}
	}
	if !s.Me {
		body = make([]byte, ri.n)
	}
	if s.N > 1 {
		if err := s.Local.BcastTree(body, s.Root); err != nil {
			return 0, err
		}
	}
	if !s.Me {
		g, err := DecodeGroup(body)
		if err != nil {
			return 0, errorf(ErrMalformed, "bad group from the root: %v", err)
		}
		s.Remote = g
	}
	return ri.id, nil
}

// ones is the status word of a round that went well.
const ones = ^uint64(0)

// AND is one round of the context-id agreement: words ANDed within the
// side, the roots AND their results, and every process gets the result
// in words. A status word (all ones: ok) carries a root's failure as a
// class code to its side (an ErrRemote error); the root itself returns
// its own error.
func (s *Side) AND(words []uint64) error {
	ext := append(slices.Clone(words), ones)
	last := len(words)
	if err := s.Local.ReduceAND(ext, s.Root); err != nil {
		return err
	}
	var ferr error
	if s.Me {
		c := s.Conn
		c.steps++
		if ferr = c.send(Step, c.steps, EncodeWords(ext[:last])); ferr == nil {
			var m msg
			if m, ferr = c.wait(Step, c.steps, s.Cancel); ferr == nil {
				var other []uint64
				if other, ferr = DecodeWords(m.body, last); ferr == nil {
					for i, x := range other {
						ext[i] &= x
					}
				}
			}
		}
		if ferr != nil {
			ext[last] = uint64(s.T.cfg.Code(ferr))
		}
	}
	if s.N > 1 {
		b := EncodeWords(ext)
		if err := s.Local.BcastTree(b, s.Root); err != nil {
			return err
		}
		var err error
		if ext, err = DecodeWords(b, last+1); err != nil {
			return err
		}
	}
	if ferr != nil {
		return ferr
	}
	if st := ext[last]; st != ones {
		if st > maxCode {
			return errorf(ErrMalformed, "the root's status word %#x", st)
		}
		return &Error{Kind: ErrRemote, Code: int(st), Detail: "the exchange between the roots failed"}
	}
	copy(words, ext)
	return nil
}

// Verdict sends this side's verdict to the other root and combines it
// with the other's (the root only): the root's contribution to its
// side's second agreement.
func (s *Side) Verdict(side agree.Value) agree.Value {
	code := s.T.cfg.Code
	c := s.Conn
	if c == nil { // the roots never found each other: this side failed
		return Combine(side, nil, code(errorf(ErrNoConn, "the roots never found each other")))
	}
	if err := c.send(Final, 0, EncodeVerdict(side)); err != nil {
		return Combine(side, nil, code(err))
	}
	m, err := c.wait(Final, 0, s.Cancel)
	if err != nil {
		return Combine(side, nil, code(err))
	}
	other, err := DecodeVerdict(m.body)
	if err != nil {
		return Combine(side, nil, code(err))
	}
	return Combine(side, &other, 0)
}

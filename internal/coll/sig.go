package coll

// Signatures of collective calls.
//
// MPI calls a program erroneous when the members of a communicator make
// different collective calls at the same point of their sequence (another
// operation, root, count, element type or reduction); ftmpi detects it.
// Every message of a public collective carries the signature of the
// sender's call, a Sig, beside its tag (Set.Sig: the header's Seq of an
// eager message or of a request to send, which those frames do not use
// otherwise, so a signature costs no byte on the wire and no copy). The
// tag of every public collective of a communicator is the same function
// of the call's sequence number alone (TagColl), so the messages of a
// Bcast and of a Reduce made at the same point match each other, and the
// receiver compares the signature with its own call's: a difference is
// reported, naming both calls, instead of a wrong result or a wait for a
// message that never comes.

// Sig is the signature of a collective call, packed in 64 bits:
//
//	bit 63      1 (a signature is never 0: 0 means "none")
//	bits 58-62  kind (KBarrier...)
//	bits 53-57  reduction operation code (0: none; the caller's numbering)
//	bits 32-52  root (saturated at SigMaxRoot)
//	bits 0-31   count in elements (saturated at SigMaxCount)
//
// The element type travels in the header's own type field. Saturated
// fields compare equal above their maximum: the byte counts of the
// messages still catch a difference there.
type Sig uint64

// Largest root and count a Sig holds exactly.
const (
	SigMaxRoot  = 1<<21 - 1
	SigMaxCount = 1<<32 - 1
)

// MakeSig packs a signature. count < 0 means "not part of the signature"
// (the v-variants, whose counts differ by member) and is stored as 0.
func MakeSig(kind, op, root, count int) Sig {
	root = min(max(root, 0), SigMaxRoot)
	count = min(max(count, 0), SigMaxCount)
	return Sig(1<<63 | uint64(kind&31)<<58 | uint64(op&31)<<53 | uint64(root)<<32 | uint64(count))
}

// Kind, Op, Root and Count unpack s.
func (s Sig) Kind() int  { return int(s >> 58 & 31) }
func (s Sig) Op() int    { return int(s >> 53 & 31) }
func (s Sig) Root() int  { return int(s >> 32 & SigMaxRoot) }
func (s Sig) Count() int { return int(s & SigMaxCount) }

// Rooted reports whether calls of kind have a root.
func Rooted(kind int) bool {
	switch kind {
	case KBcast, KReduce, KGather, KGatherv, KScatter, KScatterv:
		return true
	}
	return false
}

// Counted reports whether the signature of a call of kind holds its count
// (every member passes the same one).
func Counted(kind int) bool {
	switch kind {
	case KBarrier, KGatherv, KScatterv, KAlltoallv, KNeighborAllgatherv, KNeighborAlltoallv:
		return false
	}
	return true
}

// Reducing reports whether calls of kind take a reduction operation.
func Reducing(kind int) bool {
	switch kind {
	case KReduce, KAllreduce, KReduceScatter, KReduceScatterBlock, KScan, KExscan:
		return true
	}
	return false
}

// TagColl is the tag of every message of the public collective call
// number seq of a communicator (its second phase adds kPhase2<<24, see
// Set.phase2). PhaseTags lists both, for poisoning the whole call.
func TagColl(seq uint32) int32 { return Tag(KColl, seq) }

// PhaseTags returns the tags of both phases of the public collective call
// number seq, then those of its signature check (TagCheck): a failure of
// the call poisons all four.
func PhaseTags(seq uint32) [4]int32 {
	t, k := TagColl(seq), TagCheck(seq)
	return [4]int32{t, t + kPhase2<<24, k, k + kPhase2<<24}
}

// TagCheck is the tag of the exchange of signatures that precedes the
// public collective call number seq under the checking mode (package mpi's
// check.go): on the call's context, distinct from the call's own tags, so
// the exchange is never confused with the call.
func TagCheck(seq uint32) int32 { return Tag(KCheck, seq) }

// IsCheck reports whether tag is a signature check's (either phase): a
// failure of the check is a failure of the public call it precedes.
func IsCheck(tag int32) bool { return tag>>24&^kPhase2 == KCheck }

// KColl is the tag space of the public collectives of intracommunicators
// (every kind: the kind is in the signature); KInter + kind are the
// spaces of the intercommunicator collectives' internal sets, which run
// on the collective context of the local group beside its own calls.
// KCheck is the tag space of the signature checks (TagCheck).
const (
	KColl  = 1
	KCheck = 31
	KInter = 32
)

// Package agree is ftmpi's fault-tolerant agreement: the consensus under
// ULFM's MPI_Comm_agree / MPI_Comm_iagree and MPI_Comm_shrink. It is a pure
// state machine in the style of etcd's raft library: a Node takes inputs
// (Start, Step with a message, Failed with a failure notification) and
// returns the messages to send; it does no I/O, starts no goroutine, reads
// no clock and draws no random number. The runtime moves the messages and
// feeds the notifications; the tests drive it with a deterministic
// simulator (sim_test.go) over thousands of seeded failure schedules.
//
// # Model
//
// N processes 0..N-1 crash by stopping (fail-stop). The failure detector is
// perfect: ftmpi kills a process it declares failed, so a notification
// Failed(p) is always true, and every crash is eventually notified to every
// survivor (in any order, at any time). Messages between live processes
// are reliable but may be delayed and reordered arbitrarily; messages of a
// process that crashed may still arrive later, or be lost.
//
// # Value
//
// Processes agree on a Value, a semilattice element: Flags combine with
// AND (MPI_Comm_agree's flag), Union with set union, Inter with set
// intersection. The decision also carries Contrib, the set of processes
// whose contributions were combined, so the caller can tell which failed
// processes contributed (for MPI_Comm_agree's "failed before
// contributing" error and for shrink).
//
// # Algorithm
//
// The agreement is Paxos specialised to a perfect failure detector, run
// over k-nomial trees, in the spirit of ERA (Herault et al., SC'15).
//
// Trees. The root is the lowest process not known to have failed. The
// tree of root r is a k-nomial tree of radix k (Config.Radix; binomial for
// k = 2, flat - the root's children are all the others - for k >= N) over
// r..N-1: with virtual rank v = p-r, the parent of v clears v's lowest
// nonzero base-k digit, and v's subtree is the rank range [v, v+k^i) for
// that digit's position i. Every process computes the same tree from the
// root alone. Failed processes are bypassed: a process sends upward to its
// nearest ancestor not known to have failed, and sends downward to its
// children, replacing a failed child by that child's children
// (recursively). When a process learns of a failure it re-sends what it
// owes: its Report or Ack to its new parent, Prepare/Propose/Decide to its
// newly adopted children. Merging is idempotent, so duplicates are harmless.
//
// Ballots. Ballot r+1 belongs to root r. Ballot 1 (root 0) is open from
// the start; a process that finds every lower process failed takes over
// and opens its own ballot with Prepare down its tree. Since a process
// becomes root only once all lower processes have failed, a live root's
// ballot is higher than every ballot seen before, and ballots need no
// round numbers. A message of a lower ballot than the current one is
// stale and ignored (except Decide); a higher ballot is adopted on sight.
//
// Phases of a ballot:
//  1. Collect: each process, once it has started and its subtree's reports
//     are in (or the missing processes are known failed), sends a Report
//     up: the combined contributions with their contributor set, and the
//     highest-ballot proposal accepted in its subtree. In ballot 1 this
//     starts spontaneously at Start (no Prepare), which is what makes the
//     failure-free case cheap.
//  2. Propose: when the root holds a report of every process not known to
//     have failed, it proposes the accepted proposal with the highest
//     ballot if there is one, else the combination it collected, and sends
//     it down. Every process accepts a proposal of its current ballot.
//  3. Ack: acknowledgements (sets of processes that accepted) go up the
//     same way.
//  4. Decide: when every process not known to the root as failed has
//     accepted, the root decides and sends Decide down. A process that
//     decides sends the decision to its neighbours (parent and children)
//     in the tree of its current root, again whenever its failure knowledge
//     changes, and answers any later protocol message with it: the
//     decision is final whatever its ballot, and a late or re-attached
//     process still learns it.
//
// Failure-free this costs 4(N-1) messages and 4*ceil(log_k N) message
// rounds, whatever the radix (measured by TestFailureFreeCost: 3996
// messages and 36 rounds for N=1000 and k=2, 16 rounds for k=8). Each
// failure costs at most re-sends along the bypassed edges, plus, when a
// root fails, one more ballot of 4(N-1) messages.
//
// Early return (Config.EarlyReturn; built, off in ftmpi: not uniform, see
// ftdrive.AgreeEarlyReturn). Phases 3 and 4 are
// dropped: a process decides when it accepts a proposal, the root when it
// proposes. Failure-free that is 2(N-1) messages in 2*ceil(log_k N) rounds
// (TestFailureFreeCost), one wake-up per non-root process. A decided Node
// stays an acceptor: it keeps forwarding Propose to re-attached children
// and, in any later ballot, reports its accepted proposal.
//
// The radix trades depth for the root's load. Where processes outnumber
// cores, what an agreement costs is mostly how often processes are woken
// (each phase wakes every non-root process once in any tree, but an inner
// node of a deep tree once per child), and a flat tree wakes least.
//
// # Why it is correct
//
// Uniform agreement. Every decision comes from a root r that saw every
// process not in its failure set F_r accept (b, v). Take any later ballot
// b' > b and its root r'. r' is alive when it proposes, so, the detector
// being accurate, r' is not in F_r: r' accepted (b, v), and it did so
// before opening b' (after that it refuses ballot b). So r' reports an
// accepted ballot >= b to itself, and by induction on the ballots between
// b and b' (each proposes v), the highest accepted proposal r' sees is v:
// r' proposes v. Every root that decides therefore decides v, and every
// other process only decides a value a root decided. This holds for
// processes that crash after deciding too (uniformity).
//
// Validity. A proposal is either a re-proposal (valid by induction) or the
// combination of the reports a root collected: real contributions of the
// processes in Contrib, which include every process not known to the root
// as failed, hence every process that never fails.
//
// Termination. Once failures stop, every notification is delivered and
// every live process has started, all live processes agree on the failed
// set, the root r and the tree, and every live process has a live parent
// chain to r. If some live process has decided, the decision spreads along
// the tree edges. Otherwise every live process adopts r's ballot (Prepare
// is re-sent around failures), reports (re-sent to new parents), accepts
// and acks, and r decides. A process slow to start keeps the messages it
// gets before Start and answers them at Start.
//
// Agreement among survivors with early return. Let a process s that never
// fails decide v by accepting (b, v). Every later root r' (ballot b' > b)
// proposes only with a report of every process not known failed, hence of
// s, and s adopted b' (after which it refuses ballot b) only after
// accepting (b, v): its report carries an accepted ballot >= b, and by
// induction every proposal of a ballot in [b, b') is v, so r' proposes v.
// Every process that never fails therefore decides v (TestSimulateEarlyReturn
// checks it over the same seeded schedules). A process that decides and then
// crashes is not covered: if the root and every process its Propose reached
// crash, the survivors decide without them (TestEarlyReturnIsNotUniform).
// MPI_Comm_agree asks agreement of "all non-failed processes"; ERA's early
// return makes the same trade.
//
// # What it must not do
//
// No I/O, no goroutines, no clocks, no randomness, no logging: all of that
// belongs to the runtime that drives it. It relies on the failure detector
// being perfect: a Failed(p) notification for a process that is still
// running and still takes part would break uniform agreement, which is why
// ftmpi kills every process it declares failed; a process told Failed(self)
// falls silent. The runtime must deliver each message to the Node of the
// message's Instance, create that Node on the first message if the local
// process has not entered the agreement yet (the Node keeps messages that
// arrive before Start), and keep feeding a decided Node messages and
// notifications for a while so that others can learn the decision from
// it: a decided Node answers protocol messages with the decision.
package agree

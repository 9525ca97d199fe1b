package agree

import "testing"

// BenchmarkAgreeRound is one failure-free agreement among 16 Nodes (radix
// 16, as the runtime's), every message through its wire form (EncodeMsg,
// DecodeMsg) as the runtime sends it: the protocol's CPU cost per
// agreement, all processes together (each contribution with its kind,
// as the runtime's: internal/rte/agreekind.go).
func BenchmarkAgreeRound(b *testing.B) {
	const n = 16
	var pool []Msg
	for i := 0; i < b.N; i++ {
		nodes := make([]*Node, n)
		for p := range nodes {
			nodes[p] = New(Config{Self: p, N: n, Instance: uint64(i), Radix: 16})
		}
		pool = pool[:0]
		for p := range nodes {
			pool = append(pool, nodes[p].Start(Value{Flags: 1, Inter: SetOf(3, 9)}.OfKind(0x12), Set{})...)
		}
		for len(pool) > 0 {
			m := pool[0]
			pool = pool[1:]
			d, err := DecodeMsg(EncodeMsg(m))
			if err != nil {
				b.Fatal(err)
			}
			pool = append(pool, nodes[d.To].Step(d)...)
		}
		if !nodes[n-1].Decided() {
			b.Fatal("not decided")
		}
	}
}

package hostagent

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test leaves no goroutine behind (a rank's forwarders and waiter
// end with its exit).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

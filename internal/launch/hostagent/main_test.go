package hostagent

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/exitbell"
)

// envBellChild makes the test binary a rank of TestLocalAgentExitBell:
// it arms the exit bell it was given, says whether it had one, and waits
// to be killed.
const envBellChild = "FTMPI_HOSTAGENT_TEST_BELL_CHILD"

// Every test leaves no goroutine behind (a rank's forwarders and waiter
// end with its exit).
func TestMain(m *testing.M) {
	if os.Getenv(envBellChild) != "" {
		a, err := exitbell.ArmFromEnv()
		switch {
		case err != nil:
			fmt.Println("error", err)
		case a == nil:
			fmt.Println("none")
		default:
			fmt.Println("armed")
		}
		// Wait to be killed. Not select{}: with every goroutine parked
		// (the bell's holder too) the runtime may call that a deadlock
		// and exit before the kill, a timer keeps it from doing so.
		for {
			time.Sleep(time.Hour)
		}
	}
	goleak.VerifyTestMain(m)
}

package boot

import (
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/rankenv"
)

// Connect's bound is the launcher's scaled connection bound when that is
// longer than its own, and its own otherwise (or when the value is bad).
func TestConnectTimeoutFollowsTheLauncher(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
	}{
		{"", dialTimeout},
		{"5s", dialTimeout},
		{"31m15s", 31*time.Minute + 15*time.Second},
		{"garbage", dialTimeout},
		{"100000h", rankenv.MaxConnectTimeout},
	} {
		t.Setenv(rankenv.ConnectTimeout, tc.env)
		if got := connectTimeout(); got != tc.want {
			t.Errorf("%s=%q: %v, want %v", rankenv.ConnectTimeout, tc.env, got, tc.want)
		}
	}
}

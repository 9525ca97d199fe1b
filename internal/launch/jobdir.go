package launch

import "github.com/ftmpi/ftmpi/internal/ownerdir"

// jobDirPrefix names the per-job directories under the temporary root.
const jobDirPrefix = "ftmpi-"

// makeJobDir creates the job's directory under root, recording this
// process as its owner. It first removes the job directories under root
// that a launcher which died without cleaning up left behind (SIGKILL
// cannot be caught, and its ranks die with it by their parent-death
// signal): those whose owner process no longer exists (package ownerdir).
func makeJobDir(root string) (string, error) {
	return ownerdir.Make(root, jobDirPrefix)
}

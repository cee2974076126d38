// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// The Go SDK's leased lock and this project's `statestore lock` contend for
// one lock name: their critical sections must never overlap, both must get
// the lock, and the fencing tokens must grow in the order the lock was held.
//
// STATESTORE_CLI names the statestore binary; the broker is localhost:1883.
package extra

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/iot-operations-sdks/go/protocol/hlc"
	"github.com/Azure/iot-operations-sdks/go/services/leasedlock"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

const (
	turns = 15                    // critical sections on each side
	hold  = 50 * time.Millisecond // time spent inside one
	ttl   = 5 * time.Second       // lease time: far longer than a turn
)

// The critical section of the CLI side: claim the directory (mkdir is
// atomic: it fails if the other side is inside), log the fencing token,
// stay a while, leave. $1 is the directory, $2 the log.
const cliSection = `mkdir "$1" || { echo "overlap: cli entered while held" >&2; exit 7; }
echo "cli $STATESTORE_LOCK_TOKEN" >>"$2"
sleep 0.05
rmdir "$1"`

func TestLockContentionWithCLI(t *testing.T) {
	cli := os.Getenv("STATESTORE_CLI")
	if cli == "" {
		t.Fatal("STATESTORE_CLI is not set (make interop sets it)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	inside := filepath.Join(dir, "inside")
	order := filepath.Join(dir, "order")
	name := "contend-" + uuid.NewString()

	client := connect(ctx, t)
	lock := leasedlock.NewLock(client, name)

	// Appends to the order log happen only inside critical sections, so the
	// log is the order in which the lock was held.
	var logMu sync.Mutex
	appendOrder := func(line string) {
		logMu.Lock()
		defer logMu.Unlock()
		f, err := os.OpenFile(order, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		_, err = fmt.Fprintln(f, line)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}

	// The CLI side, one `statestore lock` process per turn.
	cliErr := make(chan error, 1)
	go func() {
		for i := 0; i < turns; i++ {
			cmd := exec.Command(cli, "lock", name, "--ttl", fmt.Sprint(ttl.Milliseconds()),
				"--", "sh", "-c", cliSection, "sh", inside, order)
			if out, err := cmd.CombinedOutput(); err != nil {
				cliErr <- fmt.Errorf("turn %d: %v: %s", i, err, out)
				return
			}
		}
		cliErr <- nil
	}()

	// The SDK side.
	overlaps, waited := 0, 0
	for i := 0; i < turns; i++ {
		start := time.Now()
		require.NoError(t, lock.Lock(ctx, ttl))
		if time.Since(start) > hold/2 {
			waited++ // the CLI held it: there was contention
		}
		token, err := lock.Token(ctx)
		require.NoError(t, err)
		if err := os.Mkdir(inside, 0o700); err != nil {
			overlaps++ // the CLI is inside: leave its directory alone
		} else {
			appendOrder("sdk " + token.String())
			time.Sleep(hold)
			require.NoError(t, os.Remove(inside))
		}
		require.NoError(t, lock.Unlock(ctx))
	}
	require.NoError(t, <-cliErr)
	require.Zero(t, overlaps, "the SDK entered while the CLI held the lock")

	// Both sides held the lock every turn, in turns that really contended,
	// and every holder's fencing token was greater than the one before.
	data, err := os.ReadFile(order)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 2*turns)
	parser := hlc.New()
	var prev hlc.HybridLogicalClock
	var count = map[string]int{}
	switches := 0
	for i, line := range lines {
		who, text, ok := strings.Cut(line, " ")
		require.True(t, ok, line)
		count[who]++
		token, err := parser.Parse("token", text)
		require.NoError(t, err, line)
		if i > 0 {
			require.Equal(t, -1, prev.Compare(token), "tokens out of order at %q", line)
			if prevWho, _, _ := strings.Cut(lines[i-1], " "); prevWho != who {
				switches++
			}
		}
		prev = token
	}
	require.Equal(t, turns, count["cli"])
	require.Equal(t, turns, count["sdk"])
	require.Positive(t, waited, "the SDK never had to wait for the CLI")
	require.GreaterOrEqual(t, switches, 2, "the lock never changed hands back and forth")
	t.Logf("%d turns each, %d hand-overs between the SDK and the CLI, the SDK waited %d times",
		turns, switches, waited)
}

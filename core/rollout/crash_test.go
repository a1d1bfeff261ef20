package rollout

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTruncatedAtEveryOffsetOfLastTurn cuts a rollout at every byte of its
// last turn's records, as a crash in the middle of a write would, and
// checks that the rebuild never fails and the turns that ended before are
// intact.
func TestTruncatedAtEveryOffsetOfLastTurn(t *testing.T) {
	s, _ := openStore(t, Options{})
	p := recordThread(t, s, "t-cut",
		turnScript{id: "t1", prompt: "one", end: "completed", withCommand: true},
		turnScript{id: "t2", prompt: "two", end: "failed"},
		turnScript{id: "t3", prompt: "three", end: "completed"})
	full := must(os.ReadFile(p))
	ref := mustRead(t, p, ReadOptions{})
	// The last turn's records start at its turn context line.
	start := strings.Index(string(full), `"type":"turn_context","turnId":"t3"`)
	start = strings.LastIndexByte(string(full[:start]), '\n') + 1
	for off := start; off <= len(full); off++ {
		// The same code as ReadThread, without a file per offset.
		th, err := rebuild(context.Background(), bytes.NewReader(full[:off]), int64(off), p, ReadOptions{})
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		if len(th.Turns) < 2 {
			t.Fatalf("offset %d: %d turns", off, len(th.Turns))
		}
		for i := range 2 {
			if th.Turns[i].Status != ref.Turns[i].Status || len(th.Turns[i].Items) != len(ref.Turns[i].Items) {
				t.Fatalf("offset %d: turn %d is %s with %d items, want %s with %d", off, i,
					th.Turns[i].Status, len(th.Turns[i].Items), ref.Turns[i].Status, len(ref.Turns[i].Items))
			}
		}
		if len(th.Turns) == 3 && off < len(full)-1 && th.Turns[2].Status != TurnInterrupted {
			t.Fatalf("offset %d: cut turn is %s", off, th.Turns[2].Status)
		}
		// A cut just before a newline leaves a whole record, which is kept.
		torn := full[off-1] != '\n' && !(full[off-1] == '}' && full[off] == '\n')
		if torn != (len(th.Warnings) == 1) || len(th.Warnings) > 1 {
			t.Fatalf("offset %d: warnings %v", off, th.Warnings)
		}
		// The index's summary survives the same cuts.
		sum, _, err := continueSummary(bytes.NewReader(full[:off]), int64(off), summaryLimits(Limits{}, 0), nil)
		if err != nil || len(sum.Turns) < 2 || sum.Preview != "one" {
			t.Fatalf("offset %d: summary %+v %v", off, sum, err)
		}
	}
}

const crashChildEnv = "ROLLOUT_CRASH_CHILD_HOME"

// TestCrashChild is the writer process of TestKillDuringWrites; it does
// nothing in a normal run.
func TestCrashChild(t *testing.T) {
	home := os.Getenv(crashChildEnv)
	if home == "" {
		t.Skip("helper process")
	}
	s, err := Open(home, Options{NoGitInfo: true, NoIndexCache: true})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	r, err := s.Create(testMeta("t-crash", baseTime))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("path", r.Path())
	big := strings.Repeat("output line\n", 5000)
	for i := 0; ; i++ {
		id := "turn-" + strconv.Itoa(i)
		recordTurn(t, r, turnScript{id: id, prompt: "prompt " + big[:i%1000], end: "completed", withCommand: true})
		if err := r.Sync(context.Background()); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("synced", i)
	}
}

// TestKillDuringWrites kills a writing process with SIGKILL and checks
// that every turn it had synced is whole in the rebuilt thread.
func TestKillDuringWrites(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var path string
	synced := -1
	timeout := time.After(10 * time.Second)
	for synced < 20 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("child exited early")
			}
			switch f := strings.Fields(l); {
			case len(f) == 2 && f[0] == "path":
				path = f[1]
			case len(f) == 2 && f[0] == "synced":
				synced, _ = strconv.Atoi(f[1])
			case len(f) > 0 && f[0] == "error":
				t.Fatalf("child: %s", l)
			}
		case <-timeout:
			t.Fatalf("child synced only %d turns", synced+1)
		}
	}
	cmd.Process.Kill() // SIGKILL, mid-stream
	cmd.Wait()
	killed = true
	go func() {
		for range lines {
		}
	}()

	th, err := ReadThread(context.Background(), path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Turns) < synced+1 {
		t.Fatalf("%d turns rebuilt, %d were synced", len(th.Turns), synced+1)
	}
	for i := 0; i <= synced; i++ {
		tn := th.Turns[i]
		if tn.ID != "turn-"+strconv.Itoa(i) || tn.Status != TurnCompleted || len(tn.Items) != 3 {
			t.Fatalf("synced turn %d rebuilt as %s %s with %d items", i, tn.ID, tn.Status, len(tn.Items))
		}
	}
	if len(th.Warnings) > 1 {
		t.Fatalf("warnings %v", th.Warnings)
	}
	t.Logf("killed after %d synced turns; %d turns rebuilt, warnings %v", synced+1, len(th.Turns), th.Warnings)
	// The thread can go on after the crash.
	s, _ := Open(home, Options{NoGitInfo: true, NoIndexCache: true})
	r, err := s.Reopen("t-crash")
	if err != nil {
		t.Fatal(err)
	}
	recordTurn(t, r, turnScript{id: "after-crash", prompt: "again", end: "completed"})
	if err := r.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	th2 := mustRead(t, path, ReadOptions{})
	if last := th2.Turns[len(th2.Turns)-1]; last.ID != "after-crash" || last.Status != TurnCompleted {
		t.Fatalf("turn after crash %+v", last)
	}
}

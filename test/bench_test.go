package test

import (
	"bufio"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkStartToInitialize measures a process start: from exec to the
// initialize response on stdout. The exit that follows is not timed.
func BenchmarkStartToInitialize(b *testing.B) {
	home := shortTempDir(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cmd := exec.Command(Binary(), "serve", "--home", home, "--log-level", "error")
		cmd.Env = filteredEnv()
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		b.StartTimer()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := stdin.Write([]byte(`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}` + "\n")); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || len(line) < 10 {
			b.Fatalf("no initialize response: %q %v", line, err)
		}
		total += time.Since(start)
		b.StopTimer()
		_ = stdin.Close()
		_ = cmd.Wait()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
}

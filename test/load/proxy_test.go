package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// The proxy carries both directions unchanged.
func TestSlowProxyCarriesBothDirections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c) // echo
	}()
	p, err := newSlowProxy(ln.Addr().String(), 1<<20, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := bytes.Repeat([]byte("0123456789abcdef"), 1024)
	go func() { _, _ = c.Write(sent) }()
	got := make([]byte, len(sent))
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read back %v", err)
	}
	if !bytes.Equal(got, sent) {
		t.Errorf("the echo differs from what was sent")
	}
}

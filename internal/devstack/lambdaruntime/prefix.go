package lambdaruntime

import (
	"bytes"
	"io"
	"sync"
)

// PrefixWriter writes whole lines to w, each prefixed, so the output of
// several functions interleaves line by line, never mid-line.
type PrefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	buf    []byte
}

// NewPrefixWriter returns a PrefixWriter; a nil w discards.
func NewPrefixWriter(w io.Writer, prefix string) *PrefixWriter {
	if w == nil {
		w = io.Discard
	}
	return &PrefixWriter{w: w, prefix: []byte(prefix)}
}

func (p *PrefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte{}, p.prefix...), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}

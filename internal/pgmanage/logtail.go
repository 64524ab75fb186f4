package pgmanage

import (
	"io"
	"os"
	"strings"
)

// logTail returns about the last n lines of the file at path, for error
// messages; problems reading it are reported inline instead.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(cannot read " + path + ": " + err.Error() + ")"
	}
	defer f.Close()
	// 16 KiB holds far more than 20 log lines of normal length.
	const window = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		if _, err := f.Seek(-window, io.SeekEnd); err != nil {
			return "(cannot read " + path + ": " + err.Error() + ")"
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "(cannot read " + path + ": " + err.Error() + ")"
	}
	return lastLines(string(b), n)
}

// lastLines returns the last n lines of s without a trailing newline.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

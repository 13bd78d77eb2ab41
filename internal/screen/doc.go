// Package screen turns an agent's terminal output into the text a person would read.
//
// Strip and Summary serve logs and run records: they drop every control sequence and keep the
// characters, in the order they came, so a progress bar redrawn with \r reads as all its frames.
//
// Screen serves "what is on the agent's screen now" when no tmux pane exists to capture: it runs
// the output through a terminal emulator (github.com/charmbracelet/x/vt), so a spinner redrawn a
// hundred times reads once, as it last looked, and a full-screen TUI reads as its last frame. A
// supervisor relaying a pty uses it so:
//
//	scr := screen.New(cols, rows) // the pty's size
//	defer scr.Close()
//	scr.ReplyTo(ptmx)             // answers to "where is the cursor?" go back to the agent
//	go io.Copy(io.MultiWriter(logFile, scr), ptmx)
//	…
//	scr.Resize(cols, rows)        // with every TIOCSWINSZ on the pty
//	if n := scr.Written(); n != seen { seen = n; lines := scr.Lines(20) … }
//
// The emulator is slow (about 5 MB/s on one core, a hundredth of a relay's pace), so Write
// only copies into a bounded buffer and the emulator catches up when the screen is read; what
// that trades away is told at Screen. Reading the screen costs up to about 50 ms after a burst
// of output, microseconds when nothing came.
package screen

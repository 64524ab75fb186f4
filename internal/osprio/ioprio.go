package osprio

import "fmt"

// IOClass is a Linux I/O scheduling class (see ioprio_set(2)). Values match
// the kernel's IOPRIO_CLASS_* numbers.
type IOClass int

const (
	// IOClassNone means no class was set: the kernel derives best-effort
	// priority from the nice value.
	IOClassNone IOClass = 0
	// IOClassRT (real time) is served before everything else; setting it
	// needs privilege and can starve the rest of the machine.
	IOClassRT IOClass = 1
	// IOClassBestEffort is the normal class, with levels 0 (highest) to 7.
	IOClassBestEffort IOClass = 2
	// IOClassIdle only gets disk time when nobody else wants it.
	IOClassIdle IOClass = 3
)

// ioLevels is the number of levels inside the RT and best-effort classes.
const ioLevels = 8

func (c IOClass) String() string {
	switch c {
	case IOClassNone:
		return "none"
	case IOClassRT:
		return "realtime"
	case IOClassBestEffort:
		return "best-effort"
	case IOClassIdle:
		return "idle"
	}
	return fmt.Sprintf("IOClass(%d)", int(c))
}

// IOPrio is an I/O class together with its level.
type IOPrio struct {
	Class IOClass
	Level int // 0 (highest) to 7 for RT and best-effort; must be 0 otherwise
}

func (p IOPrio) String() string {
	if p.Class == IOClassRT || p.Class == IOClassBestEffort {
		return fmt.Sprintf("%s/%d", p.Class, p.Level)
	}
	return p.Class.String()
}

// checkIOPrio insists on level 0 for the classes without levels, so that one
// setting has one spelling (the Applier compares settings for equality).
func checkIOPrio(class IOClass, level int) error {
	switch class {
	case IOClassRT, IOClassBestEffort:
		if level < 0 || level >= ioLevels {
			return invalidf("I/O level %d out of range for class %s (0..%d)", level, class, ioLevels-1)
		}
	case IOClassNone, IOClassIdle:
		if level != 0 {
			return invalidf("I/O class %s has no levels; level must be 0, got %d", class, level)
		}
	default:
		return invalidf("unknown I/O class %d", int(class))
	}
	return nil
}

const (
	ioprioClassShift = 13
	// Newer kernels keep priority hints in bits 3..12; the level is only the
	// low three bits.
	ioprioLevelMask = ioLevels - 1
)

func encodeIOPrio(class IOClass, level int) uintptr {
	return uintptr(class)<<ioprioClassShift | uintptr(level)
}

func decodeIOPrio(v uintptr) (IOClass, int) {
	return IOClass(v >> ioprioClassShift), int(v & ioprioLevelMask)
}

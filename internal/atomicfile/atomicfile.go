// Package atomicfile writes a file so that a reader sees either its old
// content or its new content, never a part of it.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with the permissions perm, through a
// temporary file in the same directory renamed over path. The file and,
// after the rename, its directory are synced, so that the new content
// survives a crash once WriteFile returns. On error the temporary file is
// removed and path is left as it was.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	// CreateTemp makes the file with mode 0600: nobody else can read it
	// before Chmod, which matters for token files.
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(err, ignoreMissing(os.Remove(tmp)))
	}
	// The rename is durable once the directory is synced; a directory
	// that cannot be synced (some file systems) does not undo the write.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxUnpackBytes bounds what one gunzip, tar -x or unzip writes out, so a
// small bomb cannot fill the volume past what its limits would refuse anyway.
const maxUnpackBytes = 256 << 20

func cmdGzip(c *cmdCtx) int {
	f, ok := c.parse("cdkfn123456789", map[string]string{"stdout": "c", "decompress": "d", "keep": "k", "force": "f"})
	if !ok {
		return 1
	}
	decompress := f.has("d") || c.name == "gunzip" || c.name == "zcat"
	toStdout := f.has("c") || c.name == "zcat" || len(f.rest) == 0
	level := gzip.DefaultCompression
	for l := '1'; l <= '9'; l++ {
		if f.has(string(l)) {
			level = int(l - '0')
		}
	}
	files := f.rest
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		in, err := c.open(name)
		if err != nil {
			status = c.fail("%v", err)
			continue
		}
		var w io.Writer = c.out
		var out *os.File
		target := ""
		if !toStdout {
			target = name + ".gz"
			if decompress {
				if !strings.HasSuffix(name, ".gz") {
					in.Close()
					status = c.fail("%s: unknown suffix -- ignored", name)
					continue
				}
				target = strings.TrimSuffix(name, ".gz")
			}
			if out, err = c.create(target, false); err != nil {
				in.Close()
				status = c.fail("%v", err)
				continue
			}
			w = out
		}
		if decompress {
			zr, err := gzip.NewReader(in)
			if err == nil {
				var n int64
				n, err = io.Copy(w, io.LimitReader(zr, maxUnpackBytes+1))
				if err == nil && n > maxUnpackBytes {
					err = fmt.Errorf("unpacks past %d bytes", maxUnpackBytes)
				}
			}
			if err != nil {
				status = c.fail("%s: %v", name, err)
			}
		} else {
			zw, _ := gzip.NewWriterLevel(w, level)
			if _, err := io.Copy(zw, in); err != nil {
				status = c.fail("%s: %v", name, err)
			}
			if err := zw.Close(); err != nil {
				status = c.fail("%s: %v", name, err)
			}
		}
		in.Close()
		if out != nil {
			out.Close()
			if status == 0 && !f.has("k") && name != "-" {
				os.Remove(c.abs(name))
			}
		}
	}
	return status
}

func cmdTar(c *cmdCtx) int {
	args := c.args
	// tar's first word may be bundled flags without a dash: tar czf x.tgz dir
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = append([]string{"-" + args[0]}, args[1:]...)
	}
	sub := *c
	sub.args = args
	f, ok := sub.parse("cxtzvf:C:", map[string]string{"create": "c", "extract": "x", "list": "t", "gzip": "z", "verbose": "v", "file=": "f", "directory=": "C"})
	if !ok {
		return 2
	}
	dir := f.get("C", ".")
	archive := f.get("f", "-")
	switch {
	case f.has("c"):
		var w io.Writer = c.out
		if archive != "-" {
			fh, err := c.create(archive, false)
			if err != nil {
				return c.fail("%v", err)
			}
			defer fh.Close()
			w = fh
		}
		if f.has("z") {
			zw := gzip.NewWriter(w)
			defer zw.Close()
			w = zw
		}
		tw := tar.NewWriter(w)
		defer tw.Close()
		for _, root := range f.rest {
			err := filepath.WalkDir(c.abs(joinPath(dir, root)), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				r, _ := filepath.Rel(c.abs(dir), p)
				hdr, err := tar.FileInfoHeader(info, "")
				if err != nil {
					return err
				}
				hdr.Name = filepath.ToSlash(r)
				if d.IsDir() {
					hdr.Name += "/"
				}
				if f.has("v") {
					fmt.Fprintln(c.errw, hdr.Name)
				}
				if err := tw.WriteHeader(hdr); err != nil || d.IsDir() {
					return err
				}
				fh, err := os.Open(p)
				if err != nil {
					return err
				}
				defer fh.Close()
				_, err = io.Copy(tw, fh)
				return err
			})
			if err != nil {
				return c.fail("%v", fileError(root, err))
			}
		}
		return 0
	case f.has("x") || f.has("t"):
		in, err := c.open(archive)
		if err != nil {
			return c.fail("%v", err)
		}
		defer in.Close()
		var r io.Reader = in
		if f.has("z") || strings.HasSuffix(archive, ".tgz") || strings.HasSuffix(archive, ".gz") {
			zr, err := gzip.NewReader(in)
			if err != nil {
				return c.fail("%v", err)
			}
			r = zr
		}
		tr := tar.NewReader(r)
		var written int64
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				return 0
			}
			if err != nil {
				return c.fail("%v", err)
			}
			if f.has("t") {
				fmt.Fprintln(c.out, hdr.Name)
				continue
			}
			if f.has("v") {
				fmt.Fprintln(c.out, hdr.Name)
			}
			if st := c.unpack(dir, hdr.Name, hdr.Typeflag == tar.TypeDir, tr, &written); st != 0 {
				return st
			}
		}
	}
	return c.fail("one of -c, -x or -t is needed")
}

// unpack writes one archive member under dir, refusing names that climb out.
func (c *cmdCtx) unpack(dir, name string, isDir bool, r io.Reader, written *int64) int {
	clean := path.Clean("/" + name)[1:]
	if clean == "" || strings.HasPrefix(name, "/") || strings.Contains("/"+name+"/", "/../") {
		return c.fail("%s: refusing a member whose path leaves the folder", name)
	}
	target := joinPath(dir, clean)
	if isDir {
		if err := os.MkdirAll(c.abs(target), 0o755); err != nil {
			return c.fail("%v", fileError(target, err))
		}
		return 0
	}
	if err := os.MkdirAll(filepath.Dir(c.abs(target)), 0o755); err != nil {
		return c.fail("%v", fileError(target, err))
	}
	fh, err := c.create(target, false)
	if err != nil {
		return c.fail("%v", err)
	}
	n, err := io.Copy(fh, io.LimitReader(r, maxUnpackBytes-*written+1))
	fh.Close()
	*written += n
	if err != nil {
		return c.fail("%v", fileError(target, err))
	}
	if *written > maxUnpackBytes {
		return c.fail("unpacks past %d bytes", maxUnpackBytes)
	}
	return 0
}

func cmdUnzip(c *cmdCtx) int {
	f, ok := c.parse("lod:qp", nil)
	if !ok || len(f.rest) == 0 {
		return c.fail("usage: unzip [-l] [-o] [-q] [-p] [-d DIR] FILE.zip")
	}
	zr, err := zip.OpenReader(c.abs(f.rest[0]))
	if err != nil {
		return c.fail("%v", fileError(f.rest[0], err))
	}
	defer zr.Close()
	var written int64
	for _, zf := range zr.File {
		if f.has("l") {
			fmt.Fprintf(c.out, "%9d  %s\n", zf.UncompressedSize64, zf.Name)
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return c.fail("%s: %v", zf.Name, err)
		}
		if f.has("p") {
			io.Copy(c.out, io.LimitReader(rc, maxUnpackBytes))
			rc.Close()
			continue
		}
		if !f.has("q") {
			fmt.Fprintf(c.out, "  inflating: %s\n", zf.Name)
		}
		st := c.unpack(f.get("d", "."), zf.Name, strings.HasSuffix(zf.Name, "/"), rc, &written)
		rc.Close()
		if st != 0 {
			return st
		}
	}
	return 0
}

func cmdZip(c *cmdCtx) int {
	f, ok := c.parse("rq", nil)
	if !ok || len(f.rest) < 2 {
		return c.fail("usage: zip [-r] [-q] ARCHIVE.zip FILE…")
	}
	fh, err := c.create(f.rest[0], false)
	if err != nil {
		return c.fail("%v", err)
	}
	defer fh.Close()
	zw := zip.NewWriter(fh)
	defer zw.Close()
	for _, root := range f.rest[1:] {
		err := filepath.WalkDir(c.abs(root), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r, _ := filepath.Rel(c.dir, p)
			if d.IsDir() {
				if !f.has("r") && p != c.abs(root) {
					return filepath.SkipDir
				}
				return nil
			}
			if !f.has("q") {
				fmt.Fprintf(c.out, "  adding: %s\n", filepath.ToSlash(r))
			}
			w, err := zw.Create(filepath.ToSlash(r))
			if err != nil {
				return err
			}
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			_, err = io.Copy(w, in)
			return err
		})
		if err != nil {
			return c.fail("%v", fileError(root, err))
		}
	}
	return 0
}

#pragma once
// A temporary directory of files for tests that embed Server (key files, configs): made under
// /tmp, removed with everything in it when the object goes.
#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace mcpfan::testing {

class FileDir {
 public:
  FileDir() {
    char tmpl[] = "/tmp/mcpfan-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~FileDir() { (void)!std::system(("rm -rf '" + path_ + "'").c_str()); }
  FileDir(const FileDir&) = delete;
  FileDir& operator=(const FileDir&) = delete;

  /** Writes `text` to the file `name` in the directory; returns its path. */
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path_ + "/" + name) << text;
    return path_ + "/" + name;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace mcpfan::testing

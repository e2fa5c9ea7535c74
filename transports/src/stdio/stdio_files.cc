#include <unistd.h>

#include <algorithm>
#include <climits>

#include "server/loop_context.h"
#include "stdio/stdio_conn.h"

// stdin or stdout redirected to a regular file (`mcpfan --stdio < requests.jsonl > out.jsonl`):
// libuv cannot poll files, and a read or write there may block (a slow or full disk, NFS),
// so both go through libuv's threadpool, one request at a time, in order.
namespace mcpfan::detail {

namespace {
// Reading stops while this many bytes of answers wait to be written, and resumes below it:
// a large file of requests must not outrun a slow stdout into the pending-bytes bound.
constexpr std::size_t kFilePauseBytes = 256 * 1024;
constexpr std::size_t kFileReadBytes = 64 * 1024;
}  // namespace

struct StdioConn::FileWrite {
  uv_fs_t req;  // first member: the callback casts back
  OutBatch batch;
  StdioConn* conn;
  std::size_t next;  // first buffer not completely written (bufs[0] is the unused framing slot)
};

void StdioConn::write_file(FileWrite* fw) {
  auto& bufs = fw->batch.bufs;
  auto n = static_cast<unsigned>(std::min<std::size_t>(bufs.size() - fw->next, IOV_MAX));
  if (!out_file_.writing && out_file_.writes++ == 0) out_file_.progress_ms = uv_now(w_.loop());
  out_file_.writing = true;
  int rc = uv_fs_write(w_.loop(), &fw->req, out_file_.fd, reinterpret_cast<uv_buf_t*>(&bufs[fw->next]), n, -1,
                       [](uv_fs_t* req) {
                         auto* fw = reinterpret_cast<FileWrite*>(req);
                         StdioConn* c = fw->conn;
                         ssize_t result = req->result;
                         uv_fs_req_cleanup(req);
                         guarded(c->w_.stats(), [&] { c->file_written(fw, result); }, [&] {
                           delete fw;
                           c->close();
                         });
                       });
  if (rc != 0) file_written(fw, rc);
}

void StdioConn::file_written(FileWrite* fw, ssize_t result) {
  out_file_.progress_ms = uv_now(w_.loop());
  auto& bufs = fw->batch.bufs;
  if (result > 0 && !closing_) {
    auto left = static_cast<std::size_t>(result);
    while (fw->next < bufs.size() && left >= bufs[fw->next].iov_len) left -= bufs[fw->next++].iov_len;
    if (left > 0) {
      bufs[fw->next].iov_base = static_cast<char*>(bufs[fw->next].iov_base) + left;
      bufs[fw->next].iov_len -= left;
    }
    if (fw->next < bufs.size()) return write_file(fw);  // the rest of this batch
  }
  delete fw;
  out_file_.writing = false;
  --out_file_.writes;
  if (closing_) {  // close() left the descriptor and this connection to us
    ::close(out_file_.fd);
    out_file_.fd = -1;
    return maybe_free();
  }
  if (result <= 0) {
    w_.shard().write_done(stream_);
    return close();
  }
  w_.shard().write_done(stream_);
  maybe_finish();
}

void StdioConn::write_batch_to_file(OutBatch&& batch) {
  write_file(new FileWrite{{}, std::move(batch), this, 1});
}

void StdioConn::read_file() {
  if (closing_ || ending_ || eof_ || in_file_.reading || in_file_.fd < 0) return;
  if (stream_open_ && w_.shard().pending_bytes(stream_) > kFilePauseBytes) {
    in_file_.paused = true;  // maybe_finish() reads on once the answers drained
    return;
  }
  in_file_.paused = false;
  if (in_file_.buf.empty()) in_file_.buf.resize(kFileReadBytes);
  uv_buf_t buf = uv_buf_init(in_file_.buf.data(), static_cast<unsigned>(in_file_.buf.size()));
  in_file_.reading = true;
  in_file_.req.data = this;
  int rc = uv_fs_read(w_.loop(), &in_file_.req, in_file_.fd, &buf, 1, -1, [](uv_fs_t* req) {
    auto* c = static_cast<StdioConn*>(req->data);
    ssize_t result = req->result;
    uv_fs_req_cleanup(req);
    c->in_file_.reading = false;
    guarded(c->w_.stats(), [&] { c->file_read(result); }, [&] { c->close(); });
  });
  if (rc != 0) {
    in_file_.reading = false;
    on_eof();
  }
}

void StdioConn::file_read(ssize_t result) {
  if (closing_) {  // close() left the descriptor and this connection to us
    ::close(in_file_.fd);
    in_file_.fd = -1;
    return maybe_free();
  }
  if (result <= 0) return on_eof();  // the end of the file (or a read error: the end all the same)
  on_input(std::string_view(in_file_.buf.data(), static_cast<std::size_t>(result)));
  read_file();
}

}  // namespace mcpfan::detail

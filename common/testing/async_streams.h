// For tests of server streams that must hold no server thread while they
// wait: the client follows many streams from the test's own thread through
// one completion queue (no thread per stream either), and the process's
// thread count is read from /proc.
#ifndef MEMAUDIT_COMMON_TESTING_ASYNC_STREAMS_H_
#define MEMAUDIT_COMMON_TESTING_ASYNC_STREAMS_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

namespace memaudit::testing {

// Threads of this process now.
inline int ThreadCount() {
  int threads = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    ++threads;
  }
  return threads;
}

// Server streams of `Message`, each read to its end.
template <class Message>
class AsyncStreams {
 public:
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientAsyncReader<Message>> reader;
    Message incoming;
    std::vector<Message> received;
    grpc::Status status;
    bool done = false;
  };
  // Starts a stream: the stub's Async<Method>(ctx, request, cq, tag).
  using Starter = std::function<std::unique_ptr<grpc::ClientAsyncReader<Message>>(
      grpc::ClientContext*, grpc::CompletionQueue*, void*)>;

  // Cancels the streams still open and waits for their ends.
  ~AsyncStreams() {
    for (auto& s : streams_) {
      if (!s->done) s->ctx.TryCancel();
    }
    Pump([&] { return AllDone(); }, std::chrono::seconds(10));
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  void Start(const Starter& start) {
    auto stream = std::make_unique<Stream>();
    stream->reader = start(&stream->ctx, &cq_, Tag(streams_.size(), kStarted));
    streams_.push_back(std::move(stream));
  }

  // Handles what arrives until `until` holds (true) or `timeout` passes;
  // `until` is checked at least every 10 ms.
  bool Pump(const std::function<bool()>& until, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::system_clock::now() + timeout;
    while (!until()) {
      const auto now = std::chrono::system_clock::now();
      if (now >= deadline) return false;
      void* tag;
      bool ok;
      const grpc::CompletionQueue::NextStatus next =
          cq_.AsyncNext(&tag, &ok, std::min(deadline, now + std::chrono::milliseconds(10)));
      if (next == grpc::CompletionQueue::SHUTDOWN) return until();
      if (next == grpc::CompletionQueue::TIMEOUT) continue;
      const uintptr_t bits = reinterpret_cast<uintptr_t>(tag);
      const size_t i = bits >> 2;
      Stream& s = *streams_[i];
      if ((bits & 3) == kRead && ok) s.received.push_back(s.incoming);
      if ((bits & 3) == kFinished) {
        s.done = true;
      } else if (ok) {
        s.reader->Read(&s.incoming, Tag(i, kRead));
      } else {
        s.reader->Finish(&s.status, Tag(i, kFinished));
      }
    }
    return true;
  }

  bool EachReceived(size_t messages) const {
    for (const auto& s : streams_) {
      if (s->received.size() < messages) return false;
    }
    return true;
  }
  bool AllDone() const {
    for (const auto& s : streams_) {
      if (!s->done) return false;
    }
    return true;
  }
  std::vector<std::unique_ptr<Stream>>& streams() { return streams_; }

 private:
  enum Op : uintptr_t { kStarted = 0, kRead = 1, kFinished = 2 };
  static void* Tag(size_t stream, Op op) {
    return reinterpret_cast<void*>((static_cast<uintptr_t>(stream) << 2) | op);
  }

  grpc::CompletionQueue cq_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

}  // namespace memaudit::testing

#endif  // MEMAUDIT_COMMON_TESTING_ASYNC_STREAMS_H_

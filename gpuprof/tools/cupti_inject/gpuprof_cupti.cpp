// gpuprof's CUPTI injection library: a kernel/copy/API/NVTX timeline of any CUDA program, without nsys.
//
// The CUDA driver loads this library into the program when CUDA_INJECTION64_PATH names it and calls
// InitializeInjection() during cuInit. It turns on CUPTI's activity API (kernels, copies, memsets,
// runtime and driver calls, NVTX markers) and writes every record as one line of JSON to
// $GPUPROF_CUPTI_DIR/activity-<pid>.jsonl.partial while the program runs; at exit it flushes CUPTI's
// buffers, writes an "end" line and renames the file to activity-<pid>.jsonl. A file left with the
// .partial suffix is a program that did not exit normally.
//
// NVTX: gpuprof also names this library in NVTX_INJECTION64_PATH. NVTX loads it at the program's first
// NVTX call, often before any CUDA call (a "setup" range around cudaMalloc), and calls
// InitializeInjectionNvtx2: recording starts there, and the call is handed on to libcupti's own
// InitializeInjectionNvtx2, so CUPTI sees every range from the first one.
// gpuprof/parsers/cupti_activity.py reads the files; the format is documented there.

#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

// The newest record layouts of the CUPTI these headers come from (new fields are appended, so a
// newer CUPTI's records read correctly through them).
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;
typedef CUpti_ActivityMemcpy6 MemcpyRecord;
#else
typedef CUpti_ActivityKernel9 KernelRecord;
typedef CUpti_ActivityMemcpy5 MemcpyRecord;
#endif
typedef CUpti_ActivityMemset4 MemsetRecord;
typedef CUpti_ActivityMarker2 MarkerRecord;

namespace {

const int FORMAT_VERSION = 1;
const size_t BUFFER_BYTES = 8u << 20;  // CUPTI fills one buffer per request; 8 MiB holds ~40k kernels

std::mutex g_lock;           // bufferCompleted runs on CUPTI's worker thread as well as at flush
FILE* g_file = nullptr;
std::string g_partial, g_final;
std::atomic<bool> g_started{false};
pid_t g_pid = 0;  // a forked child inherits the file: only the process that opened it writes to it

void json_string(std::string& out, const char* text) {
  if (text == nullptr) {
    out += "null";
    return;
  }
  out += '"';
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(text); *p; ++p) {
    char c = static_cast<char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (*p < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", *p);
      out += escaped;
    } else {
      out += c;  // UTF-8 passes through; the reader replaces invalid bytes
    }
  }
  out += '"';
}

void field(std::string& out, const char* name, unsigned long long value) {
  char text[64];
  std::snprintf(text, sizeof text, ",\"%s\":%llu", name, value);
  out += text;
}

void signed_field(std::string& out, const char* name, long long value) {
  char text[64];
  std::snprintf(text, sizeof text, ",\"%s\":%lld", name, value);
  out += text;
}

void text_field(std::string& out, const char* name, const char* value) {
  out += ",\"";
  out += name;
  out += "\":";
  json_string(out, value);
}

// The fields every GPU operation's record has: when it ran, where, and the API call that made it.
template <typename Record>
void on_the_gpu(std::string& out, const Record* r) {
  field(out, "start", r->start);
  field(out, "end", r->end);
  field(out, "device", r->deviceId);
  field(out, "stream", r->streamId);
  field(out, "correlation", r->correlationId);
}

void kernel(std::string& out, const KernelRecord* k) {
  int status = 1;
  char* demangled = k->name ? abi::__cxa_demangle(k->name, nullptr, nullptr, &status) : nullptr;
  out += "{\"type\":\"kernel\"";
  text_field(out, "name", status == 0 && demangled ? demangled : k->name);
  text_field(out, "mangled", k->name);
  std::free(demangled);
  on_the_gpu(out, k);
  field(out, "context", k->contextId);
  char shape[160];
  std::snprintf(shape, sizeof shape, ",\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d]", k->gridX, k->gridY, k->gridZ,
                k->blockX, k->blockY, k->blockZ);
  out += shape;
  field(out, "registers", k->registersPerThread);
  signed_field(out, "static_shared", k->staticSharedMemory);
  signed_field(out, "dynamic_shared", k->dynamicSharedMemory);
  out += "}\n";
}

void memcpy_line(std::string& out, const MemcpyRecord* m) {
  out += "{\"type\":\"memcpy\"";
  field(out, "copy_kind", m->copyKind);
  field(out, "bytes", m->bytes);
  on_the_gpu(out, m);
  out += "}\n";
}

void memset_line(std::string& out, const MemsetRecord* m) {
  out += "{\"type\":\"memset\"";
  field(out, "bytes", m->bytes);
  on_the_gpu(out, m);
  out += "}\n";
}

void api_line(std::string& out, const CUpti_ActivityAPI* a, bool runtime) {
  const char* name = nullptr;
  cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid, &name);
  out += runtime ? "{\"type\":\"runtime\"" : "{\"type\":\"driver\"";
  text_field(out, "name", name);
  field(out, "cbid", a->cbid);
  field(out, "start", a->start);
  field(out, "end", a->end);
  field(out, "tid", a->threadId);
  field(out, "correlation", a->correlationId);
  out += "}\n";
}

void marker_line(std::string& out, const MarkerRecord* m) {
  out += "{\"type\":\"marker\"";
  field(out, "flags", m->flags);
  field(out, "id", m->id);
  field(out, "ts", m->timestamp);
  if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    field(out, "tid", m->objectId.pt.threadId);
  }
  text_field(out, "name", m->name);
  text_field(out, "domain", m->domain);
  out += "}\n";
}

void record(std::string& out, const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      kernel(out, reinterpret_cast<const KernelRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      memcpy_line(out, reinterpret_cast<const MemcpyRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      memset_line(out, reinterpret_cast<const MemsetRecord*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      api_line(out, reinterpret_cast<const CUpti_ActivityAPI*>(r), true);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      api_line(out, reinterpret_cast<const CUpti_ActivityAPI*>(r), false);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      marker_line(out, reinterpret_cast<const MarkerRecord*>(r));
      break;
    default:
      break;
  }
}

void write_text(const std::string& text) {
  std::lock_guard<std::mutex> guard(g_lock);
  if (g_file != nullptr && !text.empty() && getpid() == g_pid) {
    std::fwrite(text.data(), 1, text.size(), g_file);
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, BUFFER_BYTES));
  *size = *buffer ? BUFFER_BYTES : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::string out;
  CUpti_Activity* r = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    record(out, r);
  }
  write_text(out);
  std::free(buffer);
}

void note(const char* what, CUptiResult result) {
  const char* said = nullptr;
  cuptiGetResultString(result, &said);
  std::string out = "{\"type\":\"warning\"";
  text_field(out, "what", what);
  text_field(out, "cupti", said);
  out += "}\n";
  write_text(out);
}

struct Kind {
  CUpti_ActivityKind kind;
  const char* name;
  bool on;
};
Kind g_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel", false}, {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy", false},
    {CUPTI_ACTIVITY_KIND_MEMSET, "memset", false},           {CUPTI_ACTIVITY_KIND_RUNTIME, "runtime", false},
    {CUPTI_ACTIVITY_KIND_DRIVER, "driver", false},           {CUPTI_ACTIVITY_KIND_MARKER, "marker", false},
};

// Turns on the kinds not yet on. Recording may start at the first NVTX call, before CUDA is
// initialised; a kind CUPTI refuses then is asked for again at cuInit, and only a refusal there is
// written down (`final`).
void enable_all(bool final) {
  for (Kind& k : g_kinds) {
    if (k.on) {
      continue;
    }
    CUptiResult result = cuptiActivityEnable(k.kind);
    k.on = result == CUPTI_SUCCESS;
    if (!k.on && final) {
      note(k.name, result);
    }
  }
}

void at_exit() {
  if (getpid() != g_pid) {
    return;
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::string out = "{\"type\":\"end\"";
  field(out, "dropped", dropped);
  out += "}\n";
  write_text(out);
  std::lock_guard<std::mutex> guard(g_lock);
  if (g_file != nullptr) {
    std::fclose(g_file);
    g_file = nullptr;
    std::rename(g_partial.c_str(), g_final.c_str());
  }
}

}  // namespace

namespace {

bool g_recording = false;  // the file is open and CUPTI's buffers are registered

void start_recording(bool final) {
  if (g_started.exchange(true)) {
    if (g_recording) {
      enable_all(final);
    }
    return;
  }
  const char* folder = std::getenv("GPUPROF_CUPTI_DIR");
  if (folder == nullptr || *folder == '\0') {
    return;  // loaded outside gpuprof: record nothing
  }
  g_pid = getpid();
  g_final = std::string(folder) + "/activity-" + std::to_string(static_cast<long>(getpid())) + ".jsonl";
  g_partial = g_final + ".partial";
  g_file = std::fopen(g_partial.c_str(), "w");
  if (g_file == nullptr) {
    std::fprintf(stderr, "gpuprof: cannot write %s; no timeline is recorded\n", g_partial.c_str());
    return;
  }
  uint32_t version = 0;
  cuptiGetVersion(&version);
  std::string out = "{\"type\":\"header\",\"format\":\"gpuprof-cupti\"";
  field(out, "version", FORMAT_VERSION);
  field(out, "cupti_api", version);
  field(out, "cupti_headers", CUPTI_API_VERSION);
  field(out, "pid", static_cast<unsigned long long>(getpid()));
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  field(out, "ts", now);
  out += "}\n";
  write_text(out);
  CUptiResult result = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (result != CUPTI_SUCCESS) {
    note("cuptiActivityRegisterCallbacks", result);
    return;
  }
  g_recording = true;
  enable_all(final);
  std::atexit(at_exit);
}

typedef const void* (*NvtxExportTableGetter)(uint32_t);
typedef int (*NvtxInjectionInit)(NvtxExportTableGetter);

// libcupti's own NVTX entry point: found through the libcupti this library is linked against (its
// InitializeInjectionNvtx2 has the same name as ours, so it is looked up in that library alone).
NvtxInjectionInit cupti_nvtx_entry() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 || info.dli_fname == nullptr) {
    return nullptr;
  }
  void* cupti = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  return cupti ? reinterpret_cast<NvtxInjectionInit>(dlsym(cupti, "InitializeInjectionNvtx2")) : nullptr;
}

}  // namespace

// Called by the CUDA driver during cuInit (CUDA_INJECTION64_PATH).
extern "C" int InitializeInjection(void) {
  start_recording(true);
  return 1;
}

// Called by NVTX at the program's first NVTX call (NVTX_INJECTION64_PATH).
extern "C" int InitializeInjectionNvtx2(NvtxExportTableGetter get_export_table) {
  NvtxInjectionInit cupti = cupti_nvtx_entry();
  int ok = cupti ? cupti(get_export_table) : 0;
  if (!ok) {
    std::string out = "{\"type\":\"warning\",\"what\":\"NVTX ranges\",\"cupti\":\"libcupti's "
                      "InitializeInjectionNvtx2 was not found or failed\"}\n";
    start_recording(false);
    write_text(out);
    return 0;
  }
  start_recording(false);  // after CUPTI has taken NVTX's calls, the order CUPTI's own samples use
  return 1;
}

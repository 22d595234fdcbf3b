// deploy/k8s against the binaries it runs, in every set-up: base and each
// overlay under deploy/k8s/overlays/ are rendered with `kubectl kustomize`,
// and every workload of each rendering (Deployment, StatefulSet, Job, bare
// Pod) is checked: the flags its containers pass exist in the binaries'
// --help, every address one service gives another leads to that service,
// Prometheus finds each metrics port, and the cluster objects around them
// (Services, probes, resources, disruption budgets, network policies, Kueue
// and KEDA objects) fit the workloads. Catches a renamed flag or port, or an
// overlay that drifted from base, before a cluster does.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

const std::string kK8sDir = std::string(MEMAUDIT_SOURCE_DIR) + "/deploy/k8s";

// ---------------------------------------------------------------------------
// Running commands and reading YAML

struct Output {
  int exit_code;
  std::string text;  // stdout and stderr together
};

Output Run(const std::string& command) {
  Output out{-1, ""};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.text.append(buffer, n);
  out.exit_code = WEXITSTATUS(pclose(pipe));
  return out;
}

bool HaveKubectl() { return Run("command -v kubectl").exit_code == 0; }

// Type tests that also take the placeholder yaml-cpp returns for a missing
// key (on which its own IsMap() etc. throw).
bool IsMap(const YAML::Node& node) { return node.IsDefined() && node.IsMap(); }
bool IsSequence(const YAML::Node& node) { return node.IsDefined() && node.IsSequence(); }
bool IsScalar(const YAML::Node& node) { return node.IsDefined() && node.IsScalar(); }

// node[path[0]][path[1]]...; a null node where a step is missing. (Nodes are
// never reassigned here: assigning a yaml-cpp Node writes through to the tree.)
YAML::Node Field(const YAML::Node& node, const std::vector<std::string>& path, size_t i = 0) {
  if (i == path.size()) return node;
  if (!IsMap(node) || !node[path[i]]) return YAML::Node();
  return Field(node[path[i]], path, i + 1);
}

std::string Str(const YAML::Node& node) { return IsScalar(node) ? node.as<std::string>() : ""; }

std::vector<std::string> Strings(const YAML::Node& node) {
  std::vector<std::string> out;
  if (IsSequence(node)) {
    for (const YAML::Node& item : node) out.push_back(Str(item));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Renderings and the workloads in them

struct Workload {
  std::string kind;
  std::string name;
  std::string ns;
  YAML::Node object;
  YAML::Node pod;  // metadata and spec: the template's, or a bare Pod itself
};

struct Container {
  const Workload* workload;
  YAML::Node node;
  std::string binary;  // command[0] without its directory
  std::vector<std::string> args;
};

struct Rendering {
  std::string dir;    // under deploy/k8s: "base", "overlays/gpu", ...
  std::string error;  // kubectl's output when it failed
  std::vector<YAML::Node> objects;
  std::vector<Workload> workloads;
  std::vector<Container> containers;

  std::vector<YAML::Node> OfKind(const std::string& kind) const {
    std::vector<YAML::Node> out;
    for (const YAML::Node& o : objects) {
      if (Str(o["kind"]) == kind) out.push_back(o);
    }
    return out;
  }
  std::optional<YAML::Node> Find(const std::string& kind, const std::string& name) const {
    for (const YAML::Node& o : objects) {
      if (Str(o["kind"]) == kind && Str(Field(o, {"metadata", "name"})) == name) return o;
    }
    return std::nullopt;
  }
};

// The pod template of each kind of workload; the object itself for a Pod.
std::optional<YAML::Node> PodOf(const YAML::Node& object) {
  const std::string kind = Str(object["kind"]);
  if (kind == "Pod") return object;
  if (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" ||
      kind == "ReplicaSet" || kind == "Job") {
    return Field(object, {"spec", "template"});
  }
  if (kind == "CronJob") return Field(object, {"spec", "jobTemplate", "spec", "template"});
  return std::nullopt;
}

std::string NamespaceOf(const YAML::Node& object) {
  const std::string ns = Str(Field(object, {"metadata", "namespace"}));
  return ns.empty() ? "default" : ns;
}

Rendering Render(const std::string& dir) {
  Rendering r;
  r.dir = dir;
  // ctest runs each test as its own process, several at once.
  const std::string file = absl::StrCat(::testing::TempDir(), "/deploy-", getpid(), "-",
                                        std::regex_replace(dir, std::regex("/"), "-"), ".yaml");
  const Output out = Run(absl::StrCat("kubectl kustomize ", kK8sDir, "/", dir, " -o ", file));
  if (out.exit_code != 0) {
    r.error = out.text;
    return r;
  }
  r.objects = YAML::LoadAllFromFile(file);
  std::filesystem::remove(file);
  for (const YAML::Node& o : r.objects) {
    if (std::optional<YAML::Node> pod = PodOf(o)) {
      r.workloads.push_back(
          Workload{Str(o["kind"]), Str(Field(o, {"metadata", "name"})), NamespaceOf(o), o, *pod});
    }
  }
  for (const Workload& w : r.workloads) {
    for (const YAML::Node& c : Field(w.pod, {"spec", "containers"})) {
      const std::vector<std::string> command = Strings(c["command"]);
      const std::string binary =
          command.empty() ? "" : std::filesystem::path(command[0]).filename().string();
      r.containers.push_back(Container{&w, c, binary, Strings(c["args"])});
    }
  }
  return r;
}

// base, then every overlay directory (deploy/k8s/overlays/*), each rendered
// once for all tests.
const std::vector<Rendering>& Renderings() {
  static const std::vector<Rendering>* renderings = [] {
    std::vector<std::string> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(kK8sDir + "/overlays")) {
      if (entry.is_directory()) dirs.push_back("overlays/" + entry.path().filename().string());
    }
    std::sort(dirs.begin(), dirs.end());
    dirs.insert(dirs.begin(), "base");
    auto* out = new std::vector<Rendering>;
    out->reserve(dirs.size());  // Containers point at their Workload.
    for (const std::string& dir : dirs) out->push_back(Render(dir));
    return out;
  }();
  return *renderings;
}

const Rendering* RenderingOf(const std::string& dir) {
  for (const Rendering& r : Renderings()) {
    if (r.dir == dir) return &r;
  }
  return nullptr;
}

// overlays/local runs under `podman kube play`, which has no probes, network
// policies, disruption budgets or Prometheus Operator: the checks of those
// skip it.
bool OnKubernetes(const Rendering& r) { return r.dir != "overlays/local"; }

// ---------------------------------------------------------------------------
// Flags, addresses, ports and quantities

// The value of `flag` ("--flag value" or "--flag=value"); empty when absent.
std::string FlagValue(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
    if (absl::StartsWith(args[i], flag + "=")) return args[i].substr(flag.size() + 1);
  }
  return "";
}

struct Address {
  std::string host;
  int port = -1;
};

Address ParseAddress(const std::string& address) {
  Address a;
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &a.port)) {
    return Address{};
  }
  a.host = address.substr(0, colon);
  return a;
}

int PortOf(const std::string& address) { return ParseAddress(address).port; }

bool IsLoopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost"; }

// A container port given by number or by the name of a port of the pod's
// containers; -1 when a name matches none.
int ResolvePort(const YAML::Node& pod, const YAML::Node& port) {
  int number;
  if (absl::SimpleAtoi(Str(port), &number)) return number;
  for (const YAML::Node& c : Field(pod, {"spec", "containers"})) {
    for (const YAML::Node& p : c["ports"]) {
      if (Str(p["name"]) == Str(port)) return p["containerPort"].as<int>();
    }
  }
  return -1;
}

std::set<int> ContainerPorts(const YAML::Node& container) {
  std::set<int> ports;
  for (const YAML::Node& p : container["ports"]) ports.insert(p["containerPort"].as<int>());
  return ports;
}

std::string PortName(const YAML::Node& pod, int number) {
  for (const YAML::Node& c : Field(pod, {"spec", "containers"})) {
    for (const YAML::Node& p : c["ports"]) {
      if (p["containerPort"].as<int>() == number) return Str(p["name"]);
    }
  }
  return "";
}

// A Kubernetes quantity ("2", "500m", "8Gi") in cores or bytes.
std::optional<double> Quantity(const YAML::Node& node) {
  static const std::map<std::string, double> kScale = {{"", 1},
                                                       {"m", 1e-3},
                                                       {"k", 1e3},
                                                       {"M", 1e6},
                                                       {"G", 1e9},
                                                       {"T", 1e12},
                                                       {"Ki", 1024.0},
                                                       {"Mi", 1048576.0},
                                                       {"Gi", 1073741824.0},
                                                       {"Ti", 1099511627776.0}};
  const std::string q = Str(node);
  const size_t unit = q.find_first_not_of("0123456789.");
  double value;
  if (q.empty() || !absl::SimpleAtod(q.substr(0, unit), &value)) return std::nullopt;
  auto scale = kScale.find(unit == std::string::npos ? "" : q.substr(unit));
  if (scale == kScale.end()) return std::nullopt;
  return value * scale->second;
}

std::optional<double> Resource(const Container& c, const std::string& kind,
                               const std::string& name) {
  return Quantity(Field(c.node, {"resources", kind, name}));
}

// ---------------------------------------------------------------------------
// Selectors

std::map<std::string, std::string> Labels(const YAML::Node& labels) {
  std::map<std::string, std::string> out;
  if (IsMap(labels)) {
    for (const auto& kv : labels) out[Str(kv.first)] = Str(kv.second);
  }
  return out;
}

std::map<std::string, std::string> PodLabels(const Workload& w) {
  return Labels(Field(w.pod, {"metadata", "labels"}));
}

// A Service's selector (a plain map): every pair is among the labels.
bool MapSelects(const YAML::Node& selector, const std::map<std::string, std::string>& labels) {
  if (!IsMap(selector)) return false;
  for (const auto& kv : selector) {
    auto it = labels.find(Str(kv.first));
    if (it == labels.end() || it->second != Str(kv.second)) return false;
  }
  return true;
}

// A LabelSelector (matchLabels and matchExpressions); an empty one selects all.
bool LabelSelectorSelects(const YAML::Node& selector,
                          const std::map<std::string, std::string>& labels) {
  if (IsMap(selector) && selector["matchLabels"] && !MapSelects(selector["matchLabels"], labels)) {
    return false;
  }
  for (const YAML::Node& e : Field(selector, {"matchExpressions"})) {
    const std::string key = Str(e["key"]), op = Str(e["operator"]);
    const std::vector<std::string> values = Strings(e["values"]);
    auto it = labels.find(key);
    const bool has = it != labels.end();
    const bool in = has && std::count(values.begin(), values.end(), it->second) > 0;
    if ((op == "In" && !in) || (op == "NotIn" && in) || (op == "Exists" && !has) ||
        (op == "DoesNotExist" && has)) {
      return false;
    }
  }
  return true;
}

// The workloads whose pods a Service selects (in its namespace).
std::vector<const Workload*> SelectedBy(const Rendering& r, const YAML::Node& service) {
  std::vector<const Workload*> out;
  for (const Workload& w : r.workloads) {
    if (w.ns == NamespaceOf(service) &&
        MapSelects(Field(service, {"spec", "selector"}), PodLabels(w))) {
      out.push_back(&w);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// The binaries

const std::string& Help(const std::string& binary) {
  static std::map<std::string, std::string> help;
  if (!help.count(binary)) {
    help[binary] = Run(absl::StrCat(MEMAUDIT_BIN_DIR, "/", binary, " --help")).text;
  }
  return help[binary];
}

bool IsWorker(const Container& c) { return c.binary == "memaudit-worker"; }

// ---------------------------------------------------------------------------
// Volumes

// The pod volume mounted read-only at a directory holding `path` in the
// container; a null node when there is none.
YAML::Node ReadOnlyVolumeHolding(const Container& c, const std::string& path) {
  for (const YAML::Node& m : c.node["volumeMounts"]) {
    if (!absl::StartsWith(path, Str(m["mountPath"]) + "/") || !m["readOnly"] ||
        !m["readOnly"].as<bool>()) {
      continue;
    }
    for (const YAML::Node& v : Field(c.workload->pod, {"spec", "volumes"})) {
      if (Str(v["name"]) == Str(m["name"])) return v;
    }
  }
  return YAML::Node();
}

// A read-only volume of cert-manager's csi-driver: a certificate and key
// issued to the pod when it starts (tls.crt, tls.key, ca.crt).
bool IsCertManagerCsi(const YAML::Node& volume) {
  return IsMap(volume) && Str(Field(volume, {"csi", "driver"})) == "csi.cert-manager.io" &&
         Str(Field(volume, {"csi", "readOnly"})) == "true";
}

// The attribute `name` (csi.cert-manager.io/NAME) of such a volume.
std::string CsiAttribute(const YAML::Node& volume, const std::string& name) {
  const YAML::Node attributes = Field(volume, {"csi", "volumeAttributes"});
  return IsMap(attributes) ? Str(attributes["csi.cert-manager.io/" + name]) : "";
}

// Where a container's address flag leads, and the server binary it must reach.
const std::map<std::string, std::string> kAddressFlags = {
    {"--scorer", "memaudit-scorer"}, {"--coordinator", "memaudit-coordinator"}};

// The containers a container reaches at `address`: one of its own pod when
// the host is loopback, else those of the pods behind the Service named by
// the host's first label whose --listen port is the Service port's target.
std::vector<const Container*> Reached(const Rendering& r, const Container& from,
                                      const std::string& address) {
  std::vector<const Container*> out;
  const Address a = ParseAddress(address);
  if (IsLoopback(a.host)) {
    for (const Container& c : r.containers) {
      if (c.workload == from.workload && PortOf(FlagValue(c.args, "--listen")) == a.port) {
        out.push_back(&c);
      }
    }
    return out;
  }
  std::optional<YAML::Node> service = r.Find("Service", a.host.substr(0, a.host.find('.')));
  if (!service) return out;
  for (const YAML::Node& port : Field(*service, {"spec", "ports"})) {
    if (port["port"].as<int>() != a.port) continue;
    const YAML::Node target = port["targetPort"] ? port["targetPort"] : port["port"];
    for (const Workload* w : SelectedBy(r, *service)) {
      for (const Container& c : r.containers) {
        if (c.workload == w &&
            PortOf(FlagValue(c.args, "--listen")) == ResolvePort(w->pod, target)) {
          out.push_back(&c);
        }
      }
    }
  }
  return out;
}

class DeployManifestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveKubectl()) {
      GTEST_SKIP() << "kubectl is not on PATH: it renders deploy/k8s (kubectl kustomize); "
                      "install it from the Kubernetes release (it is not a Debian package)";
    }
  }
};

// ---------------------------------------------------------------------------
// The tests

TEST_F(DeployManifestsTest, EverySetUpRenders) {
  ASSERT_GE(Renderings().size(), 4u);  // base, gpu, kueue, autoscale
  for (const Rendering& r : Renderings()) {
    SCOPED_TRACE(r.dir);
    EXPECT_EQ(r.error, "");
    EXPECT_FALSE(r.workloads.empty());
    for (const Container& c : r.containers)
      EXPECT_NE(c.binary, "") << "a container without command";
  }
  std::set<std::string> binaries;
  for (const Container& c : RenderingOf("base")->containers) binaries.insert(c.binary);
  EXPECT_EQ(binaries,
            (std::set<std::string>{"memaudit-coordinator", "memaudit-scorer", "memaudit-worker"}));
  EXPECT_TRUE(std::filesystem::exists(std::string(MEMAUDIT_SOURCE_DIR) + "/docker/Dockerfile"));
}

TEST_F(DeployManifestsTest, ContainersPassOnlyFlagsTheirBinaryHas) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name, " ", c.binary));
      ASSERT_THAT(Help(c.binary), HasSubstr("Usage:"));
      for (const std::string& arg : c.args) {
        if (!absl::StartsWith(arg, "--")) continue;
        const std::string flag = arg.substr(0, arg.find('='));
        EXPECT_THAT(Help(c.binary), HasSubstr(flag + " ")) << flag;
      }
      EXPECT_EQ(std::count(c.args.begin(), c.args.end(), "--insecure"), 0);
    }
  }
}

// Each server's gRPC and metrics ports are container ports, and every
// Service leads to pods of the rendering, to ports they declare.
TEST_F(DeployManifestsTest, ServersDeclareTheirPortsAndServicesLeadToThem) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name, " ", c.binary));
      const std::set<int> ports = ContainerPorts(c.node);
      for (const char* flag : {"--listen", "--metrics-listen"}) {
        const std::string address = FlagValue(c.args, flag);
        if (!address.empty()) {
          EXPECT_TRUE(ports.count(PortOf(address))) << flag << " " << address;
        }
      }
    }
    for (const YAML::Node& service : r.OfKind("Service")) {
      SCOPED_TRACE(absl::StrCat(r.dir, " Service ", Str(Field(service, {"metadata", "name"}))));
      const std::vector<const Workload*> selected = SelectedBy(r, service);
      EXPECT_FALSE(selected.empty()) << "selects no pod of the rendering";
      for (const Workload* w : selected) {
        for (const YAML::Node& port : Field(service, {"spec", "ports"})) {
          const YAML::Node target = port["targetPort"] ? port["targetPort"] : port["port"];
          const int number = ResolvePort(w->pod, target);
          EXPECT_NE(PortName(w->pod, number), "") << w->name << " declares no port " << target;
        }
      }
    }
  }
}

// Prometheus's annotations name the port the binary serves /metrics on.
TEST_F(DeployManifestsTest, PrometheusAnnotationNamesTheMetricsPort) {
  for (const Rendering& r : Renderings()) {
    for (const Workload& w : r.workloads) {
      SCOPED_TRACE(absl::StrCat(r.dir, " ", w.name));
      std::set<std::string> metrics_ports;
      for (const Container& c : r.containers) {
        const std::string address = FlagValue(c.args, "--metrics-listen");
        if (c.workload == &w && !address.empty())
          metrics_ports.insert(absl::StrCat(PortOf(address)));
      }
      if (metrics_ports.empty()) continue;
      const YAML::Node annotations = Field(w.pod, {"metadata", "annotations"});
      const std::string port = Str(annotations["prometheus.io/port"]);
      // A pod of several servers (a pod-local set-up) can name one of them.
      if (metrics_ports.size() > 1 && port.empty()) continue;
      EXPECT_TRUE(metrics_ports.count(port)) << "prometheus.io/port: " << port;
      EXPECT_EQ(Str(annotations["prometheus.io/path"]), "/metrics");
    }
  }
}

// --scorer and --coordinator lead to that server: through a Service and one
// of its ports to the server's --listen port, or, in a pod-local set-up, over
// loopback to the --listen port of that server in the same pod.
TEST_F(DeployManifestsTest, AddressesLeadToTheServerTheyName) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      for (const auto& [flag, server] : kAddressFlags) {
        const std::string address = FlagValue(c.args, flag);
        if (address.empty()) continue;
        SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name, " ", flag, " ", address));
        const std::vector<const Container*> reached = Reached(r, c, address);
        ASSERT_FALSE(reached.empty()) << "leads to no --listen port";
        for (const Container* to : reached) EXPECT_EQ(to->binary, server);
      }
    }
  }
}

// Every service serves and calls over mutual TLS with its certificate from a
// Secret, the coordinator reads its callers' token hashes from one, and the
// coordinator and the scorer their shared capability key: each file a flag
// names lies under a read-only mount of a Secret volume (under Podman, whose
// Secret volumes hand over their data still base64-encoded, of a host
// directory). A certificate, its key and CA may instead come from
// cert-manager's csi-driver, which issues them to each pod (no Secret).
TEST_F(DeployManifestsTest, CertificatesAndTokensComeFromSecrets) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name, " ", c.binary));
      std::vector<std::string> flags = {"--tls-cert", "--tls-key", "--tls-ca"};
      if (c.binary == "memaudit-coordinator") flags.push_back("--token-hashes");
      if (c.binary != "memaudit-worker") flags.push_back("--capability-key-file");
      for (const std::string& flag : flags) {
        const std::string path = FlagValue(c.args, flag);
        ASSERT_FALSE(path.empty()) << flag;
        const YAML::Node volume = ReadOnlyVolumeHolding(c, path);
        const bool from_secret =
            IsMap(volume) && (volume["secret"] || (!OnKubernetes(r) && volume["hostPath"]) ||
                              (absl::StartsWith(flag, "--tls-") && IsCertManagerCsi(volume)));
        EXPECT_TRUE(from_secret) << flag << " " << path;
      }
    }
  }
}

// No two workers share an identity: the coordinator binds a worker id and its
// leases to the certificate that registered it, so workers sharing one could
// heartbeat, complete or fail each other's tasks. A worker's certificate is
// issued to its pod by cert-manager's csi-driver (OU=worker, CN=the pod's
// name, by an Issuer of the rendering), or comes from a Secret (under Podman,
// a host directory) that no other container mounts, in a workload that runs
// one pod at a time.
TEST_F(DeployManifestsTest, EachWorkerHasACertificateOfItsOwn) {
  for (const Rendering& r : Renderings()) {
    SCOPED_TRACE(r.dir);
    std::set<std::string> autoscaled;  // what a ScaledObject sizes
    for (const YAML::Node& so : r.OfKind("ScaledObject")) {
      autoscaled.insert(Str(Field(so, {"spec", "scaleTargetRef", "name"})));
    }
    // Each Secret or host directory holding a --tls-cert: the containers
    // that mount it.
    std::map<std::string, std::vector<std::string>> mounted_by;
    int workers = 0;
    for (const Container& c : r.containers) {
      const std::string who = absl::StrCat(c.workload->name, "/", Str(c.node["name"]));
      const YAML::Node volume = ReadOnlyVolumeHolding(c, FlagValue(c.args, "--tls-cert"));
      if (IsMap(volume) && volume["secret"]) {
        mounted_by["Secret " + Str(Field(volume, {"secret", "secretName"}))].push_back(who);
      } else if (IsMap(volume) && volume["hostPath"]) {
        mounted_by["host directory " + Str(Field(volume, {"hostPath", "path"}))].push_back(who);
      }
      if (!IsWorker(c)) continue;
      ++workers;
      SCOPED_TRACE(who);
      ASSERT_TRUE(IsMap(volume)) << "--tls-cert lies under no read-only volume";
      if (IsCertManagerCsi(volume)) {
        EXPECT_THAT(CsiAttribute(volume, "common-name"), HasSubstr("${POD_NAME}"));
        EXPECT_EQ(CsiAttribute(volume, "organizationalunits"), "worker");
        EXPECT_THAT(CsiAttribute(volume, "key-usages"), HasSubstr("client auth"));
        const std::string kind = CsiAttribute(volume, "issuer-kind").empty()
                                     ? "Issuer"
                                     : CsiAttribute(volume, "issuer-kind");
        const std::string issuer = CsiAttribute(volume, "issuer-name");
        std::optional<YAML::Node> found = r.Find(kind, issuer);
        ASSERT_TRUE(found) << kind << " " << issuer << " is not in the rendering";
        if (kind == "Issuer") {
          EXPECT_EQ(NamespaceOf(*found), c.workload->ns) << "an Issuer serves its own namespace";
        }
        continue;
      }
      // A certificate of its own per container: one pod of the workload at a
      // time (the Secret's mounts are counted below).
      EXPECT_TRUE(volume["secret"] || volume["hostPath"]);
      const Workload& w = *c.workload;
      if (w.kind == "Job") {
        EXPECT_EQ(Field(w.object, {"spec", "parallelism"}).as<int>(1), 1)
            << "a Job's pods share it";
      } else if (w.kind != "Pod") {
        EXPECT_TRUE(w.kind == "Deployment" || w.kind == "StatefulSet")
            << w.kind << "'s pods share it";
        EXPECT_EQ(Field(w.object, {"spec", "replicas"}).as<int>(1), 1) << "its replicas share it";
        EXPECT_EQ(autoscaled.count(w.name), 0u) << "a ScaledObject adds pods that share it";
      }
    }
    EXPECT_GT(workers, 0);
    for (const auto& [source, containers] : mounted_by) {
      EXPECT_EQ(containers.size(), 1u)
          << source << " holds the certificate of " << absl::StrJoin(containers, ", ");
    }
  }
}

// The coordinator and the scorer refuse a TLS handshake without a client
// certificate. A deployment whose teams call with bearer tokens only drops
// --require-client-cert from the coordinator (docs/deploy.md); the manifests
// ship with it on.
TEST_F(DeployManifestsTest, ServersRequireClientCertificates) {
  for (const Rendering& r : Renderings()) {
    int servers = 0;
    for (const Container& c : r.containers) {
      if (c.binary != "memaudit-coordinator" && c.binary != "memaudit-scorer") continue;
      ++servers;
      EXPECT_EQ(std::count(c.args.begin(), c.args.end(), "--require-client-cert"), 1)
          << r.dir << " " << c.workload->name << " " << c.binary;
    }
    EXPECT_EQ(servers, 2) << r.dir;
  }
}

// The coordinator enforces the shipped per-team quotas (deploy/k8s/base/
// quotas.yaml): --quotas names a file under a read-only mount of a ConfigMap
// of the rendering holding it (under Podman, of a host directory
// scripts/container-test.sh fills from the same file), whose `default:` sets
// all four limits.
TEST_F(DeployManifestsTest, CoordinatorEnforcesTheShippedQuotas) {
  const std::vector<std::string> kLimits = {"max_concurrent_audits", "max_queued_tasks",
                                            "max_models_per_audit", "max_spec_bytes"};
  auto check_limits = [&](const YAML::Node& quotas) {
    const YAML::Node defaults = Field(quotas, {"default"});
    ASSERT_TRUE(IsMap(defaults)) << "no default: block";
    for (const std::string& limit : kLimits) {
      uint64_t value = 0;
      EXPECT_TRUE(absl::SimpleAtoi(Str(defaults[limit]), &value) && value > 0)
          << "default." << limit << ": " << Str(defaults[limit]);
    }
  };
  check_limits(YAML::LoadFile(kK8sDir + "/base/quotas.yaml"));
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      if (c.binary != "memaudit-coordinator") continue;
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name));
      const std::string path = FlagValue(c.args, "--quotas");
      ASSERT_FALSE(path.empty()) << "no --quotas";
      const YAML::Node volume = ReadOnlyVolumeHolding(c, path);
      ASSERT_TRUE(IsMap(volume)) << path << " lies under no read-only volume";
      if (!OnKubernetes(r)) {
        EXPECT_TRUE(volume["hostPath"]) << path;
        continue;
      }
      ASSERT_TRUE(volume["configMap"]) << path << " is not from a ConfigMap";
      const std::string name = Str(Field(volume, {"configMap", "name"}));
      std::optional<YAML::Node> config_map = r.Find("ConfigMap", name);
      ASSERT_TRUE(config_map) << "ConfigMap " << name << " is not in the rendering";
      const std::string file = std::filesystem::path(path).filename().string();
      const std::string text = Str(Field(*config_map, {"data", file}));
      ASSERT_NE(text, "") << "ConfigMap " << name << " holds no " << file;
      check_limits(YAML::Load(text));
    }
  }
}

// Each service runs as the image's unprivileged user with no way back to
// root (what Pod Security "restricted" asks, which the namespace enforces),
// and the image itself switches to that user.
TEST_F(DeployManifestsTest, ContainersRunAsAnUnprivilegedUser) {
  for (const Rendering& r : Renderings()) {
    for (const Workload& w : r.workloads) {
      SCOPED_TRACE(absl::StrCat(r.dir, " ", w.name));
      const YAML::Node pod = Field(w.pod, {"spec", "securityContext"});
      EXPECT_EQ(Str(pod["runAsNonRoot"]), "true");
      EXPECT_EQ(Str(pod["runAsUser"]), "10001");
      for (const YAML::Node& c : Field(w.pod, {"spec", "containers"})) {
        const YAML::Node container = c["securityContext"];
        EXPECT_EQ(Str(Field(container, {"allowPrivilegeEscalation"})), "false");
        EXPECT_EQ(Str(Field(container, {"readOnlyRootFilesystem"})), "true");
        EXPECT_EQ(Strings(Field(container, {"capabilities", "drop"})),
                  std::vector<std::string>{"ALL"});
        EXPECT_TRUE(Str(Field(pod, {"seccompProfile", "type"})) == "RuntimeDefault" ||
                    Str(Field(container, {"seccompProfile", "type"})) == "RuntimeDefault");
      }
    }
  }
  for (const Rendering& r : Renderings()) {
    for (const YAML::Node& ns : r.OfKind("Namespace")) {
      EXPECT_EQ(Str(Field(ns, {"metadata", "labels", "pod-security.kubernetes.io/enforce"})),
                "restricted")
          << r.dir;
    }
  }
  std::ifstream in(std::string(MEMAUDIT_SOURCE_DIR) + "/docker/Dockerfile");
  const std::string dockerfile{std::istreambuf_iterator<char>(in), {}};
  EXPECT_THAT(dockerfile, HasSubstr("\nUSER 10001:10001\n"));
}

TEST_F(DeployManifestsTest, EveryContainerHasRequestsAndLimits) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name, " ", c.binary));
      for (const char* resource : {"cpu", "memory"}) {
        const std::optional<double> request = Resource(c, "requests", resource);
        const std::optional<double> limit = Resource(c, "limits", resource);
        ASSERT_TRUE(request && limit) << resource;
        EXPECT_LE(*request, *limit) << resource;
      }
    }
  }
}

// The coordinator and the scorer run with requests == limits (Guaranteed
// QoS): node pressure and the OOM killer take workers first.
TEST_F(DeployManifestsTest, CoordinatorAndScorerAreGuaranteed) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      if (c.binary != "memaudit-coordinator" && c.binary != "memaudit-scorer") continue;
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name));
      for (const char* resource : {"cpu", "memory"}) {
        EXPECT_EQ(Resource(c, "requests", resource), Resource(c, "limits", resource)) << resource;
      }
    }
  }
}

// A worker's CPU request is the threads it offers, and the memory it
// registers (--memory-mb, MiB) is its memory limit, which base passes.
TEST_F(DeployManifestsTest, WorkersRequestTheirThreadsAndRegisterTheirMemory) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      if (!IsWorker(c)) continue;
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name));
      const std::string threads = FlagValue(c.args, "--threads");
      EXPECT_EQ(Resource(c, "requests", "cpu"), threads.empty() ? 1.0 : std::stod(threads));
      const std::string memory_mb = FlagValue(c.args, "--memory-mb");
      if (r.dir == "base") {
        EXPECT_NE(memory_mb, "") << "base passes --memory-mb";
      }
      if (!memory_mb.empty()) {
        EXPECT_EQ(Resource(c, "limits", "memory"), std::stod(memory_mb) * 1048576.0);
      }
    }
  }
}

// kubelet's gRPC probe cannot speak TLS: every container with a metrics port
// is probed on its /healthz, at start, for liveness and for readiness.
// (Podman's kube play runs no probes: overlays/local has none.)
TEST_F(DeployManifestsTest, ServersHaveStartupLivenessAndReadinessProbes) {
  for (const Rendering& r : Renderings()) {
    if (!OnKubernetes(r)) continue;
    for (const Container& c : r.containers) {
      const std::string metrics = FlagValue(c.args, "--metrics-listen");
      if (metrics.empty()) continue;
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name, " ", c.binary));
      for (const char* probe : {"startupProbe", "livenessProbe", "readinessProbe"}) {
        const YAML::Node get = Field(c.node, {probe, "httpGet"});
        EXPECT_EQ(Str(get["path"]), "/healthz") << probe;
        EXPECT_EQ(ResolvePort(c.workload->pod, get["port"]), PortOf(metrics)) << probe;
      }
    }
  }
}

// A StatefulSet's serviceName is a headless Service selecting its pods.
TEST_F(DeployManifestsTest, StatefulSetsNameAHeadlessService) {
  for (const Rendering& r : Renderings()) {
    for (const Workload& w : r.workloads) {
      if (w.kind != "StatefulSet") continue;
      SCOPED_TRACE(absl::StrCat(r.dir, " ", w.name));
      const std::string name = Str(Field(w.object, {"spec", "serviceName"}));
      std::optional<YAML::Node> service = r.Find("Service", name);
      ASSERT_TRUE(service) << "serviceName: " << name;
      EXPECT_EQ(Str(Field(*service, {"spec", "clusterIP"})), "None");
      EXPECT_TRUE(MapSelects(Field(*service, {"spec", "selector"}), PodLabels(w)));
    }
  }
}

// registry host (with a dot, or localhost) / path : tag (or @digest).
TEST_F(DeployManifestsTest, ImagesAreFullyQualified) {
  const std::regex qualified(
      R"(^(localhost|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)(:[0-9]+)?/[a-z0-9._/-]+)"
      R"((:[A-Za-z0-9_][A-Za-z0-9_.-]*|@sha256:[0-9a-f]{64})$)");
  for (const Rendering& r : Renderings()) {
    for (const Workload& w : r.workloads) {
      for (const char* list : {"initContainers", "containers"}) {
        for (const YAML::Node& c : Field(w.pod, {"spec", list})) {
          EXPECT_TRUE(std::regex_match(Str(c["image"]), qualified))
              << r.dir << " " << w.name << ": " << Str(c["image"]);
        }
      }
    }
  }
}

// A worker on CUDA asks for GPUs and has a thread for each (it runs a task
// per GPU at once), and tolerates and selects GPU nodes; a CPU worker asks
// for none. The gpu set-up has GPU workers of one GPU on the GPU image,
// gpu-multi of 4.
TEST_F(DeployManifestsTest, CudaWorkersHoldGpusAndAThreadForEach) {
  for (const Rendering& r : Renderings()) {
    for (const Container& c : r.containers) {
      if (!IsWorker(c)) continue;
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name));
      const YAML::Node gpus = Field(c.node, {"resources", "limits", "nvidia.com/gpu"});
      if (!absl::StartsWith(FlagValue(c.args, "--device"), "cuda")) {
        EXPECT_FALSE(IsScalar(gpus)) << "a CPU worker holding a GPU";
        continue;
      }
      const int held = std::atoi(Str(gpus).c_str());
      EXPECT_GE(held, 1) << Str(gpus);
      EXPECT_GE(std::atoi(FlagValue(c.args, "--threads").c_str()), held);
      EXPECT_EQ(held, r.dir == "overlays/gpu-multi" ? 4 : 1);
      bool tolerates = false;
      for (const YAML::Node& t : Field(c.workload->pod, {"spec", "tolerations"})) {
        tolerates |= Str(t["key"]) == "nvidia.com/gpu" && Str(t["effect"]) == "NoSchedule";
      }
      EXPECT_TRUE(tolerates);
      EXPECT_TRUE(IsMap(Field(c.workload->pod, {"spec", "nodeSelector"})));
    }
  }
  const Rendering* gpu = RenderingOf("overlays/gpu");
  ASSERT_NE(gpu, nullptr);
  int cuda_workers = 0;
  for (const Container& c : gpu->containers) {
    if (IsWorker(c) && FlagValue(c.args, "--device") == "cuda") {
      ++cuda_workers;
      EXPECT_THAT(Str(c.node["image"]), HasSubstr("/memaudit-gpu:"));
    }
  }
  EXPECT_GT(cuda_workers, 0);
}

// Kueue admits each suspended worker Job through a LocalQueue of the
// rendering, whose ClusterQueue's quota holds the whole Job; its workers
// leave once idle, so a finished batch gives its quota back.
TEST_F(DeployManifestsTest, KueueJobsAreSuspendedQueuedAndFitTheirQuota) {
  const Rendering* r = RenderingOf("overlays/kueue");
  ASSERT_NE(r, nullptr);
  int jobs = 0;
  for (const Workload& w : r->workloads) {
    SCOPED_TRACE(w.name);
    if (w.kind == "Deployment") {
      for (const Container& c : r->containers) EXPECT_FALSE(c.workload == &w && IsWorker(c));
    }
    if (w.kind != "Job") continue;
    ++jobs;
    EXPECT_EQ(Str(Field(w.object, {"spec", "suspend"})), "true");
    EXPECT_EQ(Str(Field(w.pod, {"spec", "restartPolicy"})), "OnFailure");
    const std::string queue =
        Str(Field(w.object, {"metadata", "labels", "kueue.x-k8s.io/queue-name"}));
    std::optional<YAML::Node> local_queue = r->Find("LocalQueue", queue);
    ASSERT_TRUE(local_queue) << "queue-name: " << queue;
    EXPECT_EQ(NamespaceOf(*local_queue), w.ns);
    const std::string cluster_queue_name = Str(Field(*local_queue, {"spec", "clusterQueue"}));
    std::optional<YAML::Node> cluster_queue = r->Find("ClusterQueue", cluster_queue_name);
    ASSERT_TRUE(cluster_queue) << "clusterQueue: " << cluster_queue_name;
    EXPECT_TRUE(LabelSelectorSelects(Field(*cluster_queue, {"spec", "namespaceSelector"}),
                                     {{"kubernetes.io/metadata.name", w.ns}}));
    // Quota over its flavors, each flavor defined here, against the Job's pods.
    std::map<std::string, double> quota;
    for (const YAML::Node& group : Field(*cluster_queue, {"spec", "resourceGroups"})) {
      for (const YAML::Node& flavor : group["flavors"]) {
        EXPECT_TRUE(r->Find("ResourceFlavor", Str(flavor["name"]))) << Str(flavor["name"]);
        for (const YAML::Node& res : flavor["resources"]) {
          quota[Str(res["name"])] += Quantity(res["nominalQuota"]).value_or(0);
        }
      }
    }
    const double pods = Field(w.object, {"spec", "parallelism"}).as<double>(1);
    for (const char* resource : {"cpu", "memory"}) {
      double per_pod = 0;
      for (const Container& c : r->containers) {
        if (c.workload == &w) per_pod += Resource(c, "requests", resource).value_or(0);
      }
      EXPECT_GE(quota[resource], pods * per_pod) << resource;
    }
    for (const Container& c : r->containers) {
      if (c.workload != &w || !IsWorker(c)) continue;
      int idle_seconds = 0;
      EXPECT_TRUE(absl::SimpleAtoi(FlagValue(c.args, "--exit-when-idle"), &idle_seconds));
      EXPECT_GT(idle_seconds, 0) << "--exit-when-idle";
    }
  }
  EXPECT_GT(jobs, 0);
}

// KEDA scales a worker Deployment of the rendering, which leaves its replica
// count to it, on the coordinator's queue depth, down to none.
TEST_F(DeployManifestsTest, ScaledObjectScalesTheWorkersOnTheQueue) {
  const Rendering* r = RenderingOf("overlays/autoscale");
  ASSERT_NE(r, nullptr);
  const std::vector<YAML::Node> scaled = r->OfKind("ScaledObject");
  ASSERT_FALSE(scaled.empty());
  for (const YAML::Node& so : scaled) {
    const YAML::Node target = Field(so, {"spec", "scaleTargetRef"});
    const std::string kind = Str(target["kind"]).empty() ? "Deployment" : Str(target["kind"]);
    std::optional<YAML::Node> deployment = r->Find(kind, Str(target["name"]));
    ASSERT_TRUE(deployment) << kind << " " << Str(target["name"]);
    bool runs_workers = false;
    for (const Container& c : r->containers) {
      runs_workers |= Str(Field(c.workload->object, {"metadata", "name"})) == Str(target["name"]) &&
                      IsWorker(c);
    }
    EXPECT_TRUE(runs_workers);
    EXPECT_FALSE(IsScalar(Field(*deployment, {"spec", "replicas"}))) << "replicas is KEDA's";
    EXPECT_EQ(Str(Field(so, {"spec", "minReplicaCount"})), "0");
    EXPECT_GT(Field(so, {"spec", "maxReplicaCount"}).as<int>(0), 0);
    bool on_queue = false;
    for (const YAML::Node& trigger : Field(so, {"spec", "triggers"})) {
      if (Str(trigger["type"]) != "prometheus") continue;
      on_queue |= absl::StrContains(Str(Field(trigger, {"metadata", "query"})),
                                    "memaudit_coordinator_queue_depth");
      EXPECT_NE(Str(Field(trigger, {"metadata", "serverAddress"})), "");
    }
    EXPECT_TRUE(on_queue);
  }
}

// Every Deployment and StatefulSet has a disruption budget, and none blocks
// a drain: each lets at least one of its pods go, and none counts a Job's
// pods by a percentage or maxUnavailable (Kubernetes cannot compute those
// for controllers without a scale subresource, and then refuses evictions).
TEST_F(DeployManifestsTest, DisruptionBudgetsNeverBlockADrain) {
  for (const Rendering& r : Renderings()) {
    if (!OnKubernetes(r)) continue;
    std::set<std::string> budgeted;
    for (const YAML::Node& pdb : r.OfKind("PodDisruptionBudget")) {
      const std::string name = Str(Field(pdb, {"metadata", "name"}));
      SCOPED_TRACE(absl::StrCat(r.dir, " PodDisruptionBudget ", name));
      const YAML::Node spec = pdb["spec"];
      const std::string max_unavailable = Str(spec["maxUnavailable"]);
      const std::string min_available = Str(spec["minAvailable"]);
      int covered = 0;
      for (const Workload& w : r.workloads) {
        if (w.ns != NamespaceOf(pdb) || !LabelSelectorSelects(spec["selector"], PodLabels(w))) {
          continue;
        }
        ++covered;
        budgeted.insert(w.kind + "/" + w.name);
        if (w.kind != "Deployment" && w.kind != "StatefulSet") {
          int n;
          EXPECT_TRUE(max_unavailable.empty() && absl::SimpleAtoi(min_available, &n)) << w.name;
          continue;
        }
        const int replicas = Field(w.object, {"spec", "replicas"}).as<int>(1);
        int n;
        if (!max_unavailable.empty()) {
          EXPECT_TRUE(absl::EndsWith(max_unavailable, "%")
                          ? max_unavailable != "0%"
                          : absl::SimpleAtoi(max_unavailable, &n) && n >= 1)
              << "maxUnavailable: " << max_unavailable;
        } else {
          ASSERT_TRUE(absl::SimpleAtoi(min_available, &n)) << "minAvailable: " << min_available;
          EXPECT_LT(n, replicas) << w.name << " has " << replicas << " replicas";
        }
      }
      EXPECT_GT(covered, 0) << "covers no pod of the rendering";
    }
    for (const Workload& w : r.workloads) {
      if (w.kind == "Deployment" || w.kind == "StatefulSet") {
        EXPECT_TRUE(budgeted.count(w.kind + "/" + w.name)) << r.dir << " " << w.name;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// NetworkPolicy, evaluated: whether a pod may open a connection to a port.

struct Peer {
  std::map<std::string, std::string> labels;
  std::string ns;
};

bool PeerMatches(const YAML::Node& from, const Peer& source, const std::string& policy_ns) {
  if (from["ipBlock"]) return true;  // not evaluated: counted as open
  const std::map<std::string, std::string> ns_labels = {{"kubernetes.io/metadata.name", source.ns}};
  if (from["namespaceSelector"] && !LabelSelectorSelects(from["namespaceSelector"], ns_labels)) {
    return false;
  }
  if (!from["namespaceSelector"] && source.ns != policy_ns) return false;
  return !from["podSelector"] || LabelSelectorSelects(from["podSelector"], source.labels);
}

bool PortMatches(const YAML::Node& rule_port, int number, const std::string& name) {
  if (!rule_port["port"]) return true;
  int p;
  if (!absl::SimpleAtoi(Str(rule_port["port"]), &p)) return Str(rule_port["port"]) == name;
  const int end = rule_port["endPort"] ? rule_port["endPort"].as<int>() : p;
  return p <= number && number <= end;
}

bool Admits(const Rendering& r, const Workload& target, int port, const Peer& source) {
  const std::string name = PortName(target.pod, port);
  bool selected = false;
  for (const YAML::Node& policy : r.OfKind("NetworkPolicy")) {
    const YAML::Node spec = policy["spec"];
    const std::vector<std::string> types = Strings(spec["policyTypes"]);
    if (NamespaceOf(policy) != target.ns ||
        !LabelSelectorSelects(spec["podSelector"], PodLabels(target)) ||
        (!types.empty() && std::count(types.begin(), types.end(), "Ingress") == 0)) {
      continue;
    }
    selected = true;
    for (const YAML::Node& rule : spec["ingress"]) {
      bool from_ok = !rule["from"] || rule["from"].size() == 0;
      for (const YAML::Node& from : rule["from"]) from_ok |= PeerMatches(from, source, target.ns);
      bool port_ok = !rule["ports"] || rule["ports"].size() == 0;
      for (const YAML::Node& p : rule["ports"]) port_ok |= PortMatches(p, port, name);
      if (from_ok && port_ok) return true;
    }
  }
  return !selected;
}

// Only workers and clients (pods labelled memaudit.io/client: "true") reach
// the coordinator's gRPC port; only workers and the coordinator the
// scorer's; only Prometheus (namespace monitoring) a metrics port; nothing
// else any port. Every connection a container makes is admitted.
TEST_F(DeployManifestsTest, NetworkPoliciesAdmitOnlyWhoNeedsEachPort) {
  for (const Rendering& r : Renderings()) {
    if (!OnKubernetes(r)) continue;
    SCOPED_TRACE(r.dir);
    bool default_deny = false;
    for (const YAML::Node& policy : r.OfKind("NetworkPolicy")) {
      const YAML::Node spec = policy["spec"];
      default_deny |= Labels(Field(spec, {"podSelector", "matchLabels"})).empty() &&
                      !IsSequence(Field(spec, {"podSelector", "matchExpressions"})) &&
                      Strings(spec["policyTypes"]) == std::vector<std::string>{"Ingress"} &&
                      !spec["ingress"];
    }
    EXPECT_TRUE(default_deny) << "no default-deny ingress policy";

    // The connections the containers make: their address flags, and each
    // worker to the scorer its coordinator names.
    for (const Container& c : r.containers) {
      for (const auto& address_flag : kAddressFlags) {
        for (const Container* to : Reached(r, c, FlagValue(c.args, address_flag.first))) {
          std::vector<const Container*> targets = {to};
          if (IsWorker(c)) {
            for (const Container* s : Reached(r, *to, FlagValue(to->args, "--scorer"))) {
              targets.push_back(s);
            }
          }
          for (const Container* t : targets) {
            if (t->workload == c.workload) continue;  // loopback
            EXPECT_TRUE(Admits(r, *t->workload, PortOf(FlagValue(t->args, "--listen")),
                               Peer{PodLabels(*c.workload), c.workload->ns}))
                << c.workload->name << " -> " << t->workload->name;
          }
        }
      }
    }

    for (const Container& c : r.containers) {
      const Workload& w = *c.workload;
      SCOPED_TRACE(absl::StrCat(w.name, " ", c.binary));
      const Peer client{{{"memaudit.io/client", "true"}}, w.ns};
      const Peer stranger{{{"app", "stranger"}}, w.ns};
      const Peer prometheus{{{"app.kubernetes.io/name", "prometheus"}}, "monitoring"};
      const Peer elsewhere{{{"memaudit.io/client", "true"}}, "other"};
      for (const YAML::Node& p : c.node["ports"]) {
        const int port = p["containerPort"].as<int>();
        const bool metrics = port == PortOf(FlagValue(c.args, "--metrics-listen"));
        const bool grpc = port == PortOf(FlagValue(c.args, "--listen"));
        SCOPED_TRACE(absl::StrCat("port ", port));
        EXPECT_FALSE(Admits(r, w, port, stranger));
        EXPECT_FALSE(Admits(r, w, port, elsewhere));
        EXPECT_EQ(Admits(r, w, port, prometheus), metrics);
        EXPECT_EQ(Admits(r, w, port, client), grpc && c.binary == "memaudit-coordinator");
      }
    }
  }
}

// The Prometheus Operator scrapes every metrics port: a ServiceMonitor
// selects a Service whose endpoint port leads to it.
TEST_F(DeployManifestsTest, ServiceMonitorScrapesEveryMetricsPort) {
  for (const Rendering& r : Renderings()) {
    if (!OnKubernetes(r)) continue;
    for (const Container& c : r.containers) {
      const int metrics = PortOf(FlagValue(c.args, "--metrics-listen"));
      if (metrics < 0) continue;
      SCOPED_TRACE(absl::StrCat(r.dir, " ", c.workload->name, " ", c.binary));
      bool scraped = false;
      for (const YAML::Node& monitor : r.OfKind("ServiceMonitor")) {
        for (const YAML::Node& service : r.OfKind("Service")) {
          if (NamespaceOf(service) != NamespaceOf(monitor) ||
              !LabelSelectorSelects(Field(monitor, {"spec", "selector"}),
                                    Labels(Field(service, {"metadata", "labels"}))) ||
              !MapSelects(Field(service, {"spec", "selector"}), PodLabels(*c.workload))) {
            continue;
          }
          for (const YAML::Node& endpoint : Field(monitor, {"spec", "endpoints"})) {
            const std::string path = Str(endpoint["path"]);
            for (const YAML::Node& port : Field(service, {"spec", "ports"})) {
              const YAML::Node target = port["targetPort"] ? port["targetPort"] : port["port"];
              scraped |= Str(port["name"]) == Str(endpoint["port"]) &&
                         ResolvePort(c.workload->pod, target) == metrics &&
                         (path.empty() || path == "/metrics");
            }
          }
        }
      }
      EXPECT_TRUE(scraped);
    }
  }
}

}  // namespace
}  // namespace memaudit::testing

// deploy/k8s against the binaries it runs: every flag a container passes
// exists in that binary's --help, every address one service gives another
// names a Service port, and Prometheus scrapes the port each service serves
// /metrics on. Catches a renamed flag or port before a cluster does.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

const std::string kDeployDir = std::string(MEMAUDIT_SOURCE_DIR) + "/deploy/k8s";

struct Manifests {
  std::vector<YAML::Node> workloads;                   // Deployments and StatefulSets
  std::map<std::string, std::set<int>> service_ports;  // Service name -> ports
};

Manifests Load() {
  Manifests m;
  const YAML::Node kustomization = YAML::LoadFile(kDeployDir + "/kustomization.yaml");
  for (const YAML::Node& file : kustomization["resources"]) {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(kDeployDir + "/" + file.as<std::string>())) {
      const std::string kind = doc["kind"].as<std::string>();
      if (kind == "Deployment" || kind == "StatefulSet") m.workloads.push_back(doc);
      if (kind == "Service") {
        for (const YAML::Node& port : doc["spec"]["ports"]) {
          m.service_ports[doc["metadata"]["name"].as<std::string>()].insert(port["port"].as<int>());
        }
      }
    }
  }
  return m;
}

// The value after `flag` in args; empty when absent.
std::string FlagValue(const YAML::Node& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i].as<std::string>() == flag) return args[i + 1].as<std::string>();
  }
  return "";
}

int PortOf(const std::string& address) {
  int port = -1;
  std::vector<std::string> parts = absl::StrSplit(address, ':');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &port)) return -1;
  return port;
}

TEST(DeployManifestsTest, EveryReferencedFileExists) {
  const YAML::Node kustomization = YAML::LoadFile(kDeployDir + "/kustomization.yaml");
  for (const YAML::Node& file : kustomization["resources"]) {
    EXPECT_TRUE(std::filesystem::exists(kDeployDir + "/" + file.as<std::string>())) << file;
  }
  EXPECT_TRUE(std::filesystem::exists(std::string(MEMAUDIT_SOURCE_DIR) + "/docker/Dockerfile"));
}

TEST(DeployManifestsTest, ContainersUseFlagsAndPortsTheBinariesHave) {
  const Manifests m = Load();
  ASSERT_EQ(m.workloads.size(), 3u);
  std::set<std::string> binaries;
  for (const YAML::Node& w : m.workloads) {
    const YAML::Node pod = w["spec"]["template"];
    const YAML::Node container = pod["spec"]["containers"][0];
    const std::string binary = container["command"][0].as<std::string>();
    binaries.insert(binary);
    SCOPED_TRACE(binary);
    const std::string help = RunCapture(absl::StrCat(MEMAUDIT_BIN_DIR, "/", binary, " --help"));
    ASSERT_THAT(help, HasSubstr("Usage:"));
    const YAML::Node args = container["args"];
    for (const YAML::Node& arg : args) {
      const std::string a = arg.as<std::string>();
      if (a.rfind("--", 0) == 0) {
        EXPECT_THAT(help, HasSubstr(a + " ")) << a;
      }
    }
    std::set<int> container_ports;
    for (const YAML::Node& p : container["ports"]) {
      container_ports.insert(p["containerPort"].as<int>());
    }
    // Prometheus scrapes the port the binary serves /metrics on.
    const int metrics_port = PortOf(FlagValue(args, "--metrics-listen"));
    EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/port"].as<std::string>(),
              absl::StrCat(metrics_port));
    EXPECT_TRUE(container_ports.count(metrics_port)) << metrics_port;
    const std::string listen = FlagValue(args, "--listen");
    if (!listen.empty()) {
      EXPECT_TRUE(container_ports.count(PortOf(listen))) << listen;
      // Its own Service carries the gRPC and metrics ports.
      const std::string name = w["metadata"]["name"].as<std::string>();
      ASSERT_TRUE(m.service_ports.count(name)) << name;
      EXPECT_TRUE(m.service_ports.at(name).count(PortOf(listen)));
      EXPECT_TRUE(m.service_ports.at(name).count(metrics_port));
    }
    // Addresses of other services name a Service and one of its ports.
    for (const char* flag : {"--scorer", "--coordinator"}) {
      const std::string address = FlagValue(args, flag);
      if (address.empty()) continue;
      const std::string host = address.substr(0, address.find(':'));
      ASSERT_TRUE(m.service_ports.count(host)) << flag << " " << address;
      EXPECT_TRUE(m.service_ports.at(host).count(PortOf(address))) << address;
    }
  }
  EXPECT_EQ(binaries,
            (std::set<std::string>{"memaudit-coordinator", "memaudit-scorer", "memaudit-worker"}));
}

// Every service serves and calls over mutual TLS with its certificate from a
// Secret, the coordinator reads its callers' token hashes from one, and the
// coordinator and the scorer their shared capability key: each file a flag
// names lies under a read-only mount of a Secret volume.
TEST(DeployManifestsTest, CertificatesAndTokensComeFromSecrets) {
  for (const YAML::Node& w : Load().workloads) {
    const std::string name = w["metadata"]["name"].as<std::string>();
    SCOPED_TRACE(name);
    const YAML::Node pod = w["spec"]["template"]["spec"];
    std::map<std::string, std::string> secret_of_volume;
    for (const YAML::Node& v : pod["volumes"]) {
      if (v["secret"]) {
        secret_of_volume[v["name"].as<std::string>()] = v["secret"]["secretName"].as<std::string>();
      }
    }
    const YAML::Node container = pod["containers"][0];
    std::vector<std::string> flags = {"--tls-cert", "--tls-key", "--tls-ca"};
    if (name == "memaudit-coordinator") flags.push_back("--token-hashes");
    if (name != "memaudit-worker") flags.push_back("--capability-key-file");
    for (const std::string& flag : flags) {
      const std::string path = FlagValue(container["args"], flag);
      ASSERT_FALSE(path.empty()) << flag;
      bool from_secret = false;
      for (const YAML::Node& m : container["volumeMounts"]) {
        const std::string mount = m["mountPath"].as<std::string>() + "/";
        if (path.rfind(mount, 0) == 0 && secret_of_volume.count(m["name"].as<std::string>()) &&
            m["readOnly"] && m["readOnly"].as<bool>()) {
          from_secret = true;
        }
      }
      EXPECT_TRUE(from_secret) << flag << " " << path;
    }
    for (const YAML::Node& arg : container["args"]) EXPECT_NE(arg.as<std::string>(), "--insecure");
  }
}

// Each service runs as the image's unprivileged user with no way back to
// root, and the image itself switches to that user.
TEST(DeployManifestsTest, ContainersRunAsAnUnprivilegedUser) {
  for (const YAML::Node& w : Load().workloads) {
    SCOPED_TRACE(w["metadata"]["name"].as<std::string>());
    const YAML::Node pod = w["spec"]["template"]["spec"];
    EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
    EXPECT_EQ(pod["securityContext"]["runAsUser"].as<int>(), 10001);
    const YAML::Node container = pod["containers"][0]["securityContext"];
    EXPECT_FALSE(container["allowPrivilegeEscalation"].as<bool>());
    EXPECT_TRUE(container["readOnlyRootFilesystem"].as<bool>());
    EXPECT_EQ(container["capabilities"]["drop"][0].as<std::string>(), "ALL");
  }
  std::ifstream in(std::string(MEMAUDIT_SOURCE_DIR) + "/docker/Dockerfile");
  const std::string dockerfile{std::istreambuf_iterator<char>(in), {}};
  EXPECT_THAT(dockerfile, HasSubstr("\nUSER 10001:10001\n"));
}

}  // namespace
}  // namespace memaudit::testing

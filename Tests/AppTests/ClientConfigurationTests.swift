import Foundation
import Testing

@testable import App

/// The CORS, link and profile settings, from a file and from the environment.
@Suite struct ClientConfigurationTests {
  let noDefaultFile: (String) -> Bool = { _ in false }

  @Test func theEnvironmentSetsOriginsLinksAndProfiles() throws {
    let config = try ConfigurationLoader.load(
      options: ServeOptions(),
      environment: [
        "ATTACHD_CORS_ALLOWED_ORIGINS": " https://Chat.Example.com , http://127.0.0.1:5173,",
        "ATTACHD_CORS_TENANT_ORIGINS": #"{"acme": ["https://chat.acme.example"]}"#,
        "ATTACHD_CORS_MAX_AGE": "120",
        "ATTACHD_PUBLIC_BASE_URL": "https://img.example.com/attachd/",
        "ATTACHD_DEFAULT_PROFILE": "openai",
        "ATTACHD_TENANT_PROFILES": #"{"acme": "anthropic"}"#,
      ], fileExists: noDefaultFile)
    #expect(config.cors.allowedOrigins == ["https://chat.example.com", "http://127.0.0.1:5173"])
    #expect(config.cors.tenantOrigins == ["acme": ["https://chat.acme.example"]])
    #expect(config.cors.maxAge == 120)
    #expect(config.attachments.publicBaseURL == "https://img.example.com/attachd")
    #expect(config.attachments.profiles.defaultProfile(for: "acme") == .anthropic)
    #expect(config.attachments.profiles.defaultProfile(for: "beta") == .openai)
  }

  @Test func emptyValuesMeanUnset() throws {
    let config = try ConfigurationLoader.load(
      options: ServeOptions(),
      environment: [
        "ATTACHD_CORS_ALLOWED_ORIGINS": "", "ATTACHD_PUBLIC_BASE_URL": "", "ATTACHD_TENANT_PROFILES": "",
      ],
      fileExists: noDefaultFile)
    #expect(config == Application.Configuration())
  }

  @Test(arguments: [
    ("ATTACHD_CORS_ALLOWED_ORIGINS", "*"),
    ("ATTACHD_CORS_ALLOWED_ORIGINS", "https://chat.example.com/app"),
    ("ATTACHD_CORS_TENANT_ORIGINS", #"{"acme": "https://a.example"}"#),
    ("ATTACHD_PUBLIC_BASE_URL", "https://img.example.com/?x=1"),
    ("ATTACHD_DEFAULT_PROFILE", "claude"),
    ("ATTACHD_TENANT_PROFILES", #"{"acme": "gpt"}"#),
  ])
  func aBadValueStopsStartUpNamingItsVariable(variable: String, value: String) {
    let error = #expect(throws: ConfigurationError.self) {
      try ConfigurationLoader.load(
        options: ServeOptions(), environment: [variable: value], fileExists: noDefaultFile)
    }
    #expect(
      error?.message.contains(variable) == true || error?.message.contains("cors.") == true,
      "\(error?.message ?? "")")
  }
}

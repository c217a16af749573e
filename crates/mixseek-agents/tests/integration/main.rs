//! The agents' integration tests, one test executable (see docs/ARCHITECTURE.md, "Test
//! layout"): leaders and members against the testkit's fake servers and the `mock:` provider.

mod command_member;
mod common;
mod leader;
mod native_members;
mod params;
mod reference_members;
mod web_fetch;

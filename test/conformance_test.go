package test

import "testing"

// scenarios is the conformance suite: every end-to-end behaviour of
// `paddock run`, each run against every backend (TestConformance). A
// scenario gets the backend and runs paddock only through its methods
// (b.sh, b.runPaddock, b.paddockCmd), so nothing in it is backend-specific
// unless it says so.
var scenarios = []struct {
	name string
	run  func(*testing.T, backend)
}{
	// Every signal path, and what stays allowed.
	{"ForeignSurvivesEverySignalPath", foreignSurvivesEverySignalPath},
	{"I386KillDecidedLikeNative", i386KillDecidedLikeNative},
	{"SignalZeroProbeIsAllowed", signalZeroProbeIsAllowed},
	{"OwnedProcessesCanBeSignalled", ownedProcessesCanBeSignalled},
	{"PkillMatchingOwnedAndForeign", pkillMatchingOwnedAndForeign},
	{"PkillPastTheMessageBudget", pkillPastTheMessageBudget},
	{"HarnessBehindALauncher", harnessBehindALauncher},
	{"KillallMatchingOwnedAndForeign", killallMatchingOwnedAndForeign},
	{"KillMinusOneInPidNamespace", killMinusOneInPidNamespace},
	{"KillZeroFromAgentRoot", killZeroFromAgentRoot},
	{"KillInNestedPidNamespace", killInNestedPidNamespace},
	{"NestedPidNamesNoForeignProcess", nestedPidNamesNoForeignProcess},
	{"RealProgramsSignalTheirGroups", realProgramsSignalTheirGroups},
	{"SupervisorIsOutOfReach", supervisorIsOutOfReach},
	{"SupervisorIsNotDumpable", supervisorIsNotDumpable},
	{"AgentRootTracemeRefused", agentRootTracemeRefused},
	{"SupervisorIgnoresTerminalStops", supervisorIgnoresTerminalStops},
	{"SupervisorKilledFromOutside", supervisorKilledFromOutside},
	{"RefusalStormIsSummarised", refusalStormIsSummarised},
	{"ShadowListenerRefused", shadowListenerRefused},
	{"ListenerAfterSupervisorGone", listenerAfterSupervisorGone},
	{"SignalsThroughDescriptors", signalsThroughDescriptors},
	{"PidfdSendSignalBadFd", pidfdSendSignalBadFd},
	{"ForkStormWhileSignalling", forkStormWhileSignalling},
	{"TargetsExitingMidDecision", targetsExitingMidDecision},
	{"PidReusedAfterCachedDecision", pidReusedAfterCachedDecision},
	{"JournalReadOnlyStopsBeforeStart", journalReadOnlyStopsBeforeStart},
	// The refusal's message, where the agent's harness reads it.
	{"MessageThroughHarnessPipes", messageThroughHarnessPipes},
	{"MessageInRedirectedFile", messageInRedirectedFile},
	{"NoMessageIntoReadOnlyStderr", noMessageIntoReadOnlyStderr},
	{"OneLinePerRefusalOnSharedTerminal", oneLinePerRefusalOnSharedTerminal},
	// Exec guards.
	{"PowerControlRefusedAtExec", powerControlRefusedAtExec},
	{"ProtectedServicesRefusedAtExec", protectedServicesRefusedAtExec},
	{"RebootSyscallRefused", rebootSyscallRefused},
	{"AgentCommandRefusedAtExec", agentCommandRefusedAtExec},
	{"MissingPowerCommandIsENOENT", missingPowerCommandIsENOENT},
	{"VRAMPreflightAtExec", vramPreflightAtExec},
	{"UnreadableModelHoldsNothingUp", unreadableModelHoldsNothingUp},
	{"NonDumpableCallerExecs", nonDumpableCallerExecs},
	// Adoption and the control socket.
	{"AdoptThenSignal", adoptThenSignal},
	{"AdoptPsJSON", adoptPsJSON},
	{"AdoptRefusals", adoptRefusals},
	{"AdoptionModes", adoptionModes},
	{"PaddockOnPathInSession", paddockOnPathInSession},
	{"LifelineOverrideAudited", lifelineOverrideAudited},
	{"LeaseExpiresWhenProcessDies", leaseExpiresWhenProcessDies},
	{"PaddockKillGroupOnlyWhenWhollyOwned", paddockKillGroupOnlyWhenWhollyOwned},
	{"ControlSocketFromOutside", controlSocketFromOutside},
	{"JournalFailureStillRefuses", journalFailureStillRefuses},
	// Exit codes, signal forwarding, init duties, job control.
	{"ExitStatusAndSignalForwarding", exitStatusAndSignalForwarding},
	{"PID1ReapsOrphans", pid1ReapsOrphans},
	{"PID1ForwardsSIGTERM", pid1ForwardsSIGTERM},
	{"InitForwardsTinisSet", initForwardsTinisSet},
	{"InitSurvivesEverySignal", initSurvivesEverySignal},
	{"InheritedDispositions", inheritedDispositions},
	{"TiniOptions", tiniOptions},
	{"LeftoversCleanedAfterGrace", leftoversCleanedAfterGrace},
	{"GraceZeroMeansNone", graceZeroMeansNone},
	{"ForwardToGroup", forwardToGroup},
	{"JobControl", jobControl},
	// The agent's own pty between it and the user's terminal.
	{"InteractiveShellOnPty", interactiveShellOnPty},
	{"KillZeroOnTerminal", killZeroOnTerminal},
	{"TerminalBelongsToTheAgent", terminalBelongsToTheAgent},
	{"TerminalOutOfAgentsReach", terminalOutOfAgentsReach},
	{"SharedTerminalNoPty", sharedTerminalNoPty},
	{"AgentRootStopsWithPaddock", agentRootStopsWithPaddock},
	{"PaddockInTheBackground", paddockInTheBackground},
	{"TerminalRestoredOnEveryExit", terminalRestoredOnEveryExit},
	{"TerminalControlRefused", terminalControlRefused},
	{"FrozenTerminalDoesNotHoldPaddock", frozenTerminalDoesNotHoldPaddock},
	{"OneCPU", oneCPU},
	{"SupervisorSliceNotInherited", supervisorSliceNotInherited},
	// Root agent hardening.
	{"RootAgentLosesPtraceCapability", rootAgentLosesPtraceCapability},
	{"RootAgentKeepCaps", rootAgentKeepCaps},
	{"SysrqTriggerReadOnly", sysrqTriggerReadOnly},
	{"AgentMountsStayPrivate", agentMountsStayPrivate},
	// The kernel's wall behind the supervisor.
	{"KernelWallKeepsProcMemClosed", kernelWallKeepsProcMemClosed},
	{"KernelWallBehindForcedAllow", kernelWallBehindForcedAllow},
	{"HarmWithoutSignal", harmWithoutSignal},
	{"AdoptedBehindTheWall", adoptedBehindTheWall},
	{"DeputyChecksKillPermission", deputyChecksKillPermission},
	{"StrictWallSealsProcFiles", strictWallSealsProcFiles},
	{"StrictWallSealsCgroups", strictWallSealsCgroups},
	{"KernelWallRefusalsSeen", kernelWallRefusalsSeen},
	{"StrictWallRefusalsSeen", strictWallRefusalsSeen},
}

// TestConformance runs every scenario against every backend.
func TestConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, b) })
			}
		})
	}
}

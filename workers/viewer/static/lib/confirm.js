// A confirmation (native <dialog>: focus is trapped and Escape cancels) that asks a reason.

export function confirmWithReason(title, text, okLabel = "Forget") {
  const dlg = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel;
  const reason = document.getElementById("confirm-reason");
  reason.value = "";
  return new Promise((resolve) => {
    dlg.addEventListener("close", () => {
      resolve(dlg.returnValue === "ok" ? { reason: reason.value.trim() } : null);
    }, { once: true });
    dlg.returnValue = "";
    dlg.showModal();
    reason.focus();
  });
}

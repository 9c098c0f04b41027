/** The longest delay setTimeout honours (Node clamps larger ones to 1 ms with a warning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;
